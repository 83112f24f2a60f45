// Screen sharing on the page: the "Share screen" / "Stop sharing" button, and
// the tile a remote participant's share gets while it lasts.

import { DISPLAY_MEDIA_OPTIONS, screenSource, type Conference, type Participant } from '../protocol';
import { h, icon } from './dom';

const SCREEN_ICON =
  '<svg viewBox="0 0 24 24" width="20" height="20" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><rect x="2" y="4" width="20" height="13" rx="2"/><path d="M8 21h8"/><path d="M12 17v4"/><path d="M12 13V8"/><path d="M9.5 10.5L12 8l2.5 2.5"/></svg>';

/** Whether this browser can capture a screen. */
export function canShareScreen(): boolean {
  return typeof navigator !== 'undefined' && typeof navigator.mediaDevices?.getDisplayMedia === 'function';
}

/**
 * The share button. A click asks the browser for a screen or window (its
 * picker) and shares it; while sharing, a click stops. Stopping from the
 * browser's own "Stop sharing" bar ends the capture ('ended'), which stops the
 * share for everyone too. `onError` hears a refused or failed capture.
 */
export function shareButton(conference: Conference, onError: (message: string) => void = () => {}): HTMLButtonElement {
  const btn = h('button', { class: 'ctl share', attrs: { type: 'button' } });
  let starting = false;
  const render = () => {
    const on = conference.screenShare !== null;
    const label = on ? 'Stop sharing' : 'Share screen';
    btn.replaceChildren(icon(SCREEN_ICON), h('span', { text: label }));
    btn.setAttribute('aria-label', on ? 'Stop sharing your screen' : 'Share your screen');
    btn.setAttribute('aria-pressed', String(on));
    btn.title = label;
    btn.classList.toggle('on', on);
    btn.disabled = starting || !canShareScreen();
    if (!canShareScreen()) btn.title = 'This browser cannot share a screen';
  };
  let capture: MediaStream | null = null; // what we asked the browser for
  const stop = () => {
    conference.stopScreenShare();
    for (const t of capture?.getTracks() ?? []) t.stop();
    capture = null;
  };
  btn.addEventListener('click', () => {
    if (conference.screenShare) return stop();
    starting = true;
    render();
    navigator.mediaDevices
      .getDisplayMedia(DISPLAY_MEDIA_OPTIONS)
      .then((stream) => {
        capture = stream;
        const video = stream.getVideoTracks()[0];
        video?.addEventListener('ended', () => {
          if (capture === stream) stop();
        });
        conference.startScreenShare(stream);
      })
      .catch((err: unknown) => {
        // NotAllowedError: the user closed the picker.
        if (!(err instanceof DOMException && err.name === 'NotAllowedError')) onError(`Cannot share the screen: ${String(err)}`);
      })
      .finally(() => {
        starting = false;
        render();
      });
  });
  conference.on('screen-share', ({ sharing }) => {
    if (!sharing && capture) stop(); // ended by the library (the server refused it)
    render();
  });
  conference.on('error', ({ code, source }) => {
    if (source === 'server' && code === 'too-many-tracks' && capture !== null) {
      onError('The server allows no more tracks from you: screen sharing stopped');
    }
  });
  conference.on('closed', stop);
  render();
  return btn;
}

/** The tile of p's screen share as the gallery shows it; null when p does not share. */
export function shareTileOf(p: Participant): Participant | null {
  const id = screenSource(p.id);
  if (p.screen !== id) return null;
  return { id, name: `${p.name} — screen`, audioMuted: false, videoMuted: false };
}
