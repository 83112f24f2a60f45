import { describe, expect, it } from 'vitest';
import { SIMULCAST_ENCODINGS } from '../src/protocol/conference';
import { captureEncodings, simulcastLayers } from '../src/protocol/layers';

describe('simulcastLayers', () => {
  it.each([
    [1920, 1080, 3],
    [1280, 720, 3],
    [960, 540, 3],
    [540, 960, 3], // portrait
    [958, 540, 2],
    [720, 540, 2], // 4:3 below 960×540 pixels: libwebrtc sends two
    [640, 480, 2],
    [640, 360, 2],
    [360, 640, 2],
    [638, 360, 1],
    [480, 270, 1],
    [320, 180, 1],
    [16, 16, 1],
  ])('%i×%i → %i', (width, height, want) => {
    expect(simulcastLayers({ width, height })).toBe(want);
  });
});

describe('captureEncodings', () => {
  const size = (width: number, height: number) => ({ width, height });
  const show = (encs: { rid?: string; scaleResolutionDownBy?: number; maxBitrate?: number }[]) =>
    encs.map((e) => `${e.rid ?? '-'}/${e.scaleResolutionDownBy ?? 1}/${e.maxBitrate}`);

  it('keeps the three for 960×540 and up, and for an unknown size', () => {
    const want = ['q/4/100000', 'h/2/500000', 'f/1/1500000'];
    expect(show(captureEncodings(SIMULCAST_ENCODINGS, size(1280, 720), 1_500_000))).toEqual(want);
    expect(show(captureEncodings(SIMULCAST_ENCODINGS, null, 1_500_000))).toEqual(want);
  });

  it('gives 360p to 540p two layers, ½ and full, with the caps of those picture sizes', () => {
    expect(show(captureEncodings(SIMULCAST_ENCODINGS, size(640, 360), 1_500_000))).toEqual(['q/2/100000', 'h/1/500000']);
  });

  it('gives a smaller capture one encoding without RID', () => {
    expect(captureEncodings(SIMULCAST_ENCODINGS, size(320, 180), 900_000)).toEqual([{ maxBitrate: 900_000 }]);
  });

  it('keeps scalabilityMode and does not touch its input', () => {
    const two = captureEncodings(SIMULCAST_ENCODINGS, size(640, 360), 1);
    expect(two.map((e) => e.scalabilityMode)).toEqual(['L1T3', 'L1T3']);
    expect(SIMULCAST_ENCODINGS.map((e) => e.scaleResolutionDownBy)).toEqual([4, 2, 1]);
  });
});
