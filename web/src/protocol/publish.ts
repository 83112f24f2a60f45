// What a session publishes: the camera and microphone transceivers, and a
// screen share's; video VP8 first, and every sender under end-to-end
// encryption when it is on.

import type { ConferenceOptions, Logger } from './api';
import { addVideoTransceiver, preferVp8 } from './encodings';
import type { PeerConnectionLike } from './env';
import { addScreenTransceivers, type ScreenTransceivers } from './screen';
import type { Session } from './session';

type PublishOptions = Omit<ConferenceOptions, 'room' | 'name'>;

/**
 * Publishes the local tracks: always one audio and one video transceiver.
 * Sets the session's senders (null where the environment does not expose them).
 */
export function publishLocal(
  s: Session,
  pc: PeerConnectionLike,
  stream: MediaStream | null,
  opts: PublishOptions,
  log: Logger,
): void {
  const streams = stream ? [stream] : [];
  const audio = stream?.getAudioTracks()[0];
  const video = stream?.getVideoTracks()[0];
  s.audioSender = pc.addTransceiver(audio ?? 'audio', { direction: 'sendonly', streams }).sender ?? null;
  const vt = addVideoTransceiver(pc, video ?? 'video', streams, opts, stream, log);
  preferVp8(vt, opts.codecs, log);
  if (s.audioSender) opts.e2ee?.sender(s.audioSender, 'audio');
  if (vt.sender) opts.e2ee?.sender(vt.sender, 'video');
  s.videoSender = vt.sender ?? null;
}

/** Adds a screen share's transceivers (screen.ts); null when the stream has no video. */
export function publishScreen(
  pc: PeerConnectionLike,
  stream: MediaStream,
  opts: PublishOptions,
  log: Logger,
): ScreenTransceivers | null {
  const screen = addScreenTransceivers(pc, stream);
  if (!screen) return null;
  preferVp8(screen.video, opts.codecs, log);
  const e2ee = opts.e2ee;
  if (e2ee) {
    if (screen.video.sender) e2ee.sender(screen.video.sender, 'video');
    if (screen.audio?.sender) e2ee.sender(screen.audio.sender, 'audio');
  }
  return screen;
}
