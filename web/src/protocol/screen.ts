// Screen sharing (docs/protocol.md, "Screen sharing"): the share's video, and
// its audio when the browser captured some, are published on transceivers of
// their own on the publish connection, named in the offer (`screenMids`); the
// server makes them a source of their own, `<participant id>-screen`.

import type { PeerConnectionLike, SendEncodingLike, TransceiverLike } from './env';
import { ScreenSuffix } from './generated/messages';

/**
 * The share's one video encoding. Screen content is text and lines: it must
 * stay sharp (contentHint 'detail' makes the encoder keep the resolution and
 * drop frames instead) and changes little, so a low frame rate is enough.
 * One encoding, not simulcast: every receiver shows the share large on stage,
 * so lower layers would go unused, and at 1920×1080 and 15 fps a slide or a
 * page of code costs 0.3–1.5 Mb/s (docs/protocol.md).
 */
export const SCREEN_ENCODING: Readonly<SendEncodingLike> = { maxBitrate: 2_500_000, maxFramerate: 15 };

/** What getDisplayMedia is asked for: up to 1920×1080 at 15 fps, with audio where the browser offers it. */
export const DISPLAY_MEDIA_OPTIONS = {
  video: { width: { max: 1920 }, height: { max: 1080 }, frameRate: { ideal: 15, max: 15 } },
  audio: true,
} as const;

/** The share's transceivers in one publish connection. */
export interface ScreenTransceivers {
  readonly video: TransceiverLike;
  readonly audio: TransceiverLike | null;
}

type Stoppable = TransceiverLike & { stop?(): void };

/** The source id of a participant's screen share. */
export function screenSource(participantId: string): string {
  return participantId + ScreenSuffix;
}

/** Whether a source id names a screen share. */
export function isScreenSource(id: string): boolean {
  return id.endsWith(ScreenSuffix) && id.length > ScreenSuffix.length;
}

/** Adds the share's transceivers to the publish connection (renegotiate afterwards). */
export function addScreenTransceivers(pc: PeerConnectionLike, stream: MediaStream): ScreenTransceivers | null {
  const video = stream.getVideoTracks()[0];
  if (!video) return null;
  if ('contentHint' in video) video.contentHint = 'detail';
  const streams = [stream];
  const init = { direction: 'sendonly', streams, sendEncodings: [{ ...SCREEN_ENCODING }] } as RTCRtpTransceiverInit;
  const vt = pc.addTransceiver(video, init);
  const audio = stream.getAudioTracks()[0];
  const at = audio ? pc.addTransceiver(audio, { direction: 'sendonly', streams }) : null;
  return { video: vt, audio: at };
}

/**
 * Stops the share's transceivers: the next offer rejects their sections, so
 * the server's tracks end and it stops forwarding the share at once.
 */
export function stopScreenTransceivers(t: ScreenTransceivers): void {
  for (const x of [t.video, t.audio] as (Stoppable | null)[]) {
    try {
      x?.stop?.();
    } catch {
      // already stopped (the connection closed)
    }
  }
}

/** The mids to name in the offer: those assigned so far. */
export function screenMids(t: ScreenTransceivers | null): string[] {
  if (!t) return [];
  return [t.video.mid, t.audio?.mid ?? null].filter((m): m is string => typeof m === 'string' && m !== '');
}
