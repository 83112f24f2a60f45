// How many simulcast encodings a camera gets, from its real capture size (as
// LiveKit computes its layers from the capture): a 640×360 camera offered the
// three 720p encodings would have Chromium send only its first ones, or
// (with sendable in encodings.ts) only the full one, and a thumbnail would get the
// full stream.

import type { SendEncodingLike } from './env';

export interface CaptureSize {
  width: number;
  height: number;
}

/**
 * Simulcast layers for a capture: 3 from 960×540 up, 2 from 640×360 up,
 * else 1. Counted in pixels, as libwebrtc limits layers (3 from 960×540, 2
 * from 480×270), so a portrait or 4:3 camera gets what the browser sends in
 * full and never more.
 */
export function simulcastLayers(size: CaptureSize): 1 | 2 | 3 {
  const px = size.width * size.height;
  if (px >= 960 * 540) return 3;
  if (px >= 640 * 360) return 2;
  return 1;
}

/**
 * The encodings to publish for a capture, from the full simulcast list
 * (lowest first): its first n entries, the last at full resolution and each
 * below it at half the one above, so the bitrate caps stay those of the same
 * picture sizes (a 640×360 camera sends 320×180 under q's cap and 640×360
 * under h's). One layer is a single encoding without RID (no simulcast),
 * capped at singleMaxBitrate. An unknown size keeps the full list.
 */
export function captureEncodings(
  full: readonly Readonly<SendEncodingLike>[],
  size: CaptureSize | null,
  singleMaxBitrate: number,
): SendEncodingLike[] {
  const n = size ? Math.min(simulcastLayers(size), full.length) : full.length;
  if (n <= 1 && full.length > 1) return [{ maxBitrate: singleMaxBitrate }];
  return full.slice(0, n).map((e, i) => ({ ...e, scaleResolutionDownBy: 2 ** (n - 1 - i) }));
}
