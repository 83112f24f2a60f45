// URL handling: which page a location shows, and the URL of a room.

import { parseVideoSize, type VideoSize } from './media';

const ROOM_RE = /^[A-Za-z0-9_.-]{1,64}$/;

export function isValidRoom(room: string): boolean {
  return ROOM_RE.test(room);
}

/** 1–64 characters (Unicode code points), no control characters, as the server checks. */
export function isValidName(name: string): boolean {
  const n = Array.from(name).length;
  return n >= 1 && n <= 64 && !/[\u0000-\u001f\u007f-\u009f]/.test(name);
}

export type Route =
  | { page: 'form'; room: string; name: string; video: string | null; error: string | null }
  | { page: 'room'; room: string; name: string; videoSize: VideoSize; simulcast: boolean };

/** `simulcast=0` (or `false`, `off`, `no`) publishes a single video encoding. */
export function parseSimulcast(param: string | null): boolean {
  return !['0', 'false', 'off', 'no'].includes((param ?? '').trim().toLowerCase());
}

export function route(pathname: string, search: string): Route {
  const params = new URLSearchParams(search);
  const video = params.get('video');
  let room = pathname.replace(/^\/+|\/+$/g, '');
  try {
    room = decodeURIComponent(room);
  } catch {
    // keep it raw; validation below rejects it
  }
  const name = (params.get('name') ?? '').trim();
  if (room === '') return { page: 'form', room: '', name, video, error: null };
  if (!isValidRoom(room)) {
    return {
      page: 'form',
      room,
      name,
      video,
      error: 'Room names are 1–64 letters, digits, “.”, “_” or “-”.',
    };
  }
  if (!isValidName(name)) {
    return {
      page: 'form',
      room,
      name: '',
      video,
      error: name === '' ? null : 'Names are 1–64 printable characters.',
    };
  }
  return { page: 'room', room, name, videoSize: parseVideoSize(video), simulcast: parseSimulcast(params.get('simulcast')) };
}

/**
 * The page's address without its `token` parameter, or null when it has none:
 * a token in the address bar would end up in history, bookmarks and screen
 * shares. The client keeps it in memory (for reconnects) instead.
 */
export function withoutToken(pathname: string, search: string, hash: string): string | null {
  const params = new URLSearchParams(search);
  if (!params.has('token')) return null;
  params.delete('token');
  const q = params.toString();
  return pathname + (q ? `?${q}` : '') + hash;
}

/**
 * `role=audience` joins receive-only: no camera, no microphone, no publish
 * connection (docs/protocol.md, `join`).
 */
export function isAudience(search: string): boolean {
  return new URLSearchParams(search).get('role') === 'audience';
}

/** `/<room>?name=<name>[&video=WxH][&role=audience]` */
export function roomUrl(room: string, name: string, video: string | null, audience = false): string {
  const q = new URLSearchParams({ name });
  if (video) q.set('video', video);
  if (audience) q.set('role', 'audience');
  return `/${encodeURIComponent(room)}?${q.toString()}`;
}
