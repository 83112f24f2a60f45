// Local camera and microphone.

export interface VideoSize {
  width: number;
  height: number;
}

export const DEFAULT_VIDEO_SIZE: VideoSize = { width: 1280, height: 720 };

/** Parses the `video=WxH` query parameter (e.g. `320x180`); default 1280×720. */
export function parseVideoSize(param: string | null): VideoSize {
  const m = /^(\d{1,5})x(\d{1,5})$/.exec(param ?? '');
  if (!m) return DEFAULT_VIDEO_SIZE;
  const width = Number(m[1]);
  const height = Number(m[2]);
  if (width < 16 || height < 16) return DEFAULT_VIDEO_SIZE;
  return { width, height };
}

export interface LocalMedia {
  stream: MediaStream | null;
  /** Human-readable note when not both devices could be opened. */
  problem: string | null;
}

/** Camera and microphone; falls back to one of them, then to nothing. */
export async function openLocalMedia(size: VideoSize): Promise<LocalMedia> {
  const video: MediaTrackConstraints = {
    width: { ideal: size.width },
    height: { ideal: size.height },
    frameRate: { ideal: 30 },
  };
  const md = navigator.mediaDevices;
  if (!md || typeof md.getUserMedia !== 'function') {
    return { stream: null, problem: 'Camera and microphone are not available here (a secure origin is required).' };
  }
  let firstError: unknown;
  try {
    return { stream: await md.getUserMedia({ audio: true, video }), problem: null };
  } catch (err) {
    firstError = err;
  }
  try {
    return { stream: await md.getUserMedia({ audio: true }), problem: `Camera unavailable: ${describe(firstError)}` };
  } catch {
    // try the camera alone
  }
  try {
    return { stream: await md.getUserMedia({ video }), problem: `Microphone unavailable: ${describe(firstError)}` };
  } catch {
    return { stream: null, problem: `Camera and microphone unavailable: ${describe(firstError)}` };
  }
}

function describe(err: unknown): string {
  if (err instanceof Error) return err.name === 'Error' ? err.message : `${err.name}`;
  return String(err);
}
