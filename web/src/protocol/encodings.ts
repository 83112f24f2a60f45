// The published video's send encodings: which to offer, which the browser
// can send at the capture size, and VP8 first in the codec preferences.
// Pure functions of what they are given (no Conference state).

import {
  browserCodecs,
  browserSenderCodecs,
  type CodecLike,
  type PeerConnectionLike,
  type SendEncodingLike,
  type SenderLike,
  type TransceiverLike,
} from './env';
import type { Logger } from './api';
import { captureEncodings } from './layers';

/**
 * The video encodings published by default (docs/protocol.md, "Simulcast"):
 * three VP8 simulcast encodings at ¼, ½ and full capture resolution for
 * cameras from 960×540 up (fewer for smaller ones: layers.ts), each with
 * three temporal layers where the browser supports `scalabilityMode`. The
 * lowest is capped at 100 kb/s: its base temporal layer (7.5 fps, ~40 % of it)
 * plus audio must fit a 128 kb/s link with room for repair; at 150 kb/s the
 * link ran full and every loss froze the video (docs/adaptation.md). The top
 * is capped at 1.5 Mb/s, today's Jitsi Meet VP8 default: at 2.5 Mb/s a noisy
 * 720p took 62 % of a 4 Mb/s home link, and beside one TCP download it could
 * never fit the share the estimator holds, so the stage fell to 360p
 * (docs/adaptation.md, "Beside competing TCP").
 */
export const SIMULCAST_ENCODINGS: readonly Readonly<SendEncodingLike>[] = [
  { rid: 'q', scaleResolutionDownBy: 4, maxBitrate: 100_000, scalabilityMode: 'L1T3' },
  { rid: 'h', scaleResolutionDownBy: 2, maxBitrate: 500_000, scalabilityMode: 'L1T3' },
  { rid: 'f', scaleResolutionDownBy: 1, maxBitrate: 1_500_000, scalabilityMode: 'L1T3' },
];

/** The bitrate cap of the single video encoding when simulcast is off. */
export const SINGLE_ENCODING_MAX_BITRATE = 1_500_000;

/** The ConferenceOptions that shape the video encodings. */
export interface EncodingOptions {
  simulcast?: boolean;
  videoEncodings?: readonly SendEncodingLike[];
  videoMaxBitrate?: number;
  senderCodecs?: (kind: 'audio' | 'video') => CodecLike[] | null;
  layerLimit?: boolean;
}

/**
 * The video transceiver with our send encodings. A browser that rejects them
 * gets them without scalabilityMode, then a single encoding.
 */
export function addVideoTransceiver(
  pc: PeerConnectionLike,
  trackOrKind: MediaStreamTrack | 'video',
  streams: MediaStream[],
  opts: EncodingOptions,
  localStream: MediaStream | null,
  log: Logger,
): TransceiverLike {
  const single: SendEncodingLike[] = [{ maxBitrate: opts.videoMaxBitrate ?? SINGLE_ENCODING_MAX_BITRATE }];
  const wanted = videoEncodings(opts, localStream, log);
  const attempts: SendEncodingLike[][] = [wanted];
  if (wanted.some((e) => e.scalabilityMode !== undefined)) {
    attempts.push(wanted.map(({ scalabilityMode: _, ...rest }) => rest));
  }
  if (wanted.length > 1) attempts.push(single);
  for (const [i, list] of attempts.entries()) {
    // Encodings the browser would not send at the capture size start off (see sendable).
    const on = sendable(list, list.map((e) => e.active ?? true), opts.layerLimit, localStream);
    const sendEncodings = list.map((e, k) => (on[k] || e.active === false ? e : { ...e, active: false }));
    const init = { direction: 'sendonly', streams, sendEncodings } as RTCRtpTransceiverInit;
    if (i === attempts.length - 1) return pc.addTransceiver(trackOrKind, init);
    try {
      return pc.addTransceiver(trackOrKind, init);
    } catch (err) {
      log.warn('video send encodings rejected, trying simpler ones', err);
    }
  }
  return pc.addTransceiver(trackOrKind, { direction: 'sendonly', streams });
}

/** The video send encodings to offer, `scalabilityMode` kept only where the browser lists it for VP8. */
function videoEncodings(opts: EncodingOptions, localStream: MediaStream | null, log: Logger): SendEncodingLike[] {
  const single = opts.videoMaxBitrate ?? SINGLE_ENCODING_MAX_BITRATE;
  const base =
    opts.videoEncodings ??
    (opts.simulcast === false
      ? [{ maxBitrate: single }]
      : opts.layerLimit === false
        ? SIMULCAST_ENCODINGS
        : captureEncodings(SIMULCAST_ENCODINGS, captureSize(localStream), single));
  let modes: Set<string> | null = null;
  try {
    const codecs = (opts.senderCodecs ?? browserSenderCodecs)('video') ?? [];
    const vp8 = codecs.filter((c) => c.mimeType.toLowerCase() === 'video/vp8');
    modes = new Set(vp8.flatMap((c) => (Array.isArray(c.scalabilityModes) ? c.scalabilityModes : [])));
  } catch (err) {
    log.debug('sender capabilities', err);
  }
  return base.map((e) => {
    const copy: SendEncodingLike = { ...e };
    if (copy.scalabilityMode !== undefined && !modes?.has(copy.scalabilityMode)) delete copy.scalabilityMode;
    return copy;
  });
}

/**
 * The wanted `active` flag of each encoding: none while paused; otherwise
 * every encoding until the first `layers` of the session, then those whose
 * RID it lists (an encoding without RID — a single one — always); then
 * reduced to what the browser can send at the capture size (sendable()).
 */
export function wantedActive(
  encodings: readonly SendEncodingLike[],
  paused: boolean,
  rids: ReadonlySet<string> | null,
  layerLimit: boolean | undefined,
  localStream: MediaStream | null,
): boolean[] {
  if (paused) return encodings.map(() => false);
  return sendable(
    encodings,
    encodings.map((e) => rids === null || !hasRid(e) || rids.has(e.rid as string)),
    layerLimit,
    localStream,
  );
}

/**
 * libwebrtc (Chromium, Safari) configures only the first max(L, i+1)
 * simulcast encodings, i the index of the first active one and L its layer
 * limit for the capture size (3 from 960×540 up, 2 from 480×270, else 1):
 * with all three active, a 320×180 capture sends only the ¼ encoding
 * (80×45) and a 640×480 one only ¼ and ½. A wanted set it would cut short is
 * replaced by its highest-resolution encoding alone, which is always sent
 * in full. Unchanged with layerLimit off, for a single encoding, or when the
 * capture size is unknown.
 */
function sendable(
  encodings: readonly SendEncodingLike[],
  want: boolean[],
  layerLimit: boolean | undefined,
  localStream: MediaStream | null,
): boolean[] {
  if (layerLimit === false || encodings.filter(hasRid).length < 2) return want;
  const on = want.flatMap((w, i) => (w ? [i] : []));
  if (on.length <= 1) return want;
  const size = captureSize(localStream);
  if (!size) return want;
  const limit = simulcastLayerLimit(size.width, size.height);
  if ((on.at(-1) as number) < limit) return want;
  const top = on.reduce((best, i) =>
    (encodings[i]?.scaleResolutionDownBy ?? 1) <= (encodings[best]?.scaleResolutionDownBy ?? 1) ? i : best,
  );
  return encodings.map((_, i) => i === top);
}

/** Puts VP8 (and RTX) first in a video transceiver's codec preferences, where the browser allows it. */
export function preferVp8(
  t: TransceiverLike,
  codecsOf: ((kind: 'audio' | 'video') => CodecLike[] | null) | undefined,
  log: Logger,
): void {
  if (typeof t.setCodecPreferences !== 'function') return;
  const codecs = (codecsOf ?? browserCodecs)('video');
  if (!codecs) return;
  const mime = (c: CodecLike) => c.mimeType.toLowerCase();
  const vp8 = codecs.filter((c) => mime(c) === 'video/vp8');
  if (vp8.length === 0) return;
  try {
    t.setCodecPreferences([...vp8, ...codecs.filter((c) => mime(c) === 'video/rtx')]);
  } catch (err) {
    log.warn('setCodecPreferences', err);
  }
}

/** The video sender's current encodings; null when unknown. */
export function senderEncodings(sender: SenderLike | null): SendEncodingLike[] | null {
  if (!sender) return null;
  try {
    const encodings = sender.getParameters().encodings ?? [];
    return encodings.length === 0 ? null : encodings;
  } catch {
    return null;
  }
}

/**
 * Whether the sender's encoding with this RID is active (any encoding when the
 * stats entry has no RID); null when unknown.
 */
export function encodingActive(encodings: SendEncodingLike[] | null, rid: string | null): boolean | null {
  if (!encodings) return null;
  if (rid === null) return encodings.some((e) => e.active ?? true);
  const e = encodings.find((x) => x.rid === rid);
  return e ? (e.active ?? true) : null;
}

function hasRid(e: SendEncodingLike): boolean {
  return typeof e.rid === 'string' && e.rid !== '';
}

/** How many simulcast layers libwebrtc sends for a VP8 capture of this size. */
export function simulcastLayerLimit(width: number, height: number): number {
  const px = width * height;
  if (px >= 960 * 540) return 3;
  if (px >= 480 * 270) return 2;
  return 1;
}

/** The capture size of the local video track, when the browser tells it. */
function captureSize(stream: MediaStream | null): { width: number; height: number } | null {
  const track = stream?.getVideoTracks()[0] as
    | { getSettings?: () => { width?: number; height?: number } }
    | undefined;
  if (!track || typeof track.getSettings !== 'function') return null;
  try {
    const { width, height } = track.getSettings();
    return typeof width === 'number' && typeof height === 'number' && width > 0 && height > 0
      ? { width, height }
      : null;
  } catch {
    return null;
  }
}
