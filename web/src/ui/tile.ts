// One participant tile: video, audio (remote only), name and mute indicators,
// plus the Last N states (stage, speaking, pinned, not forwarded, paused) and
// bandwidth adaptation (suspended, the layer received).

import type { VideoStats } from '../protocol';
import { formatBitrate } from './bandwidth';
import { h, icon, icons } from './dom';
import type { Quality } from './quality';

export interface TileOptions {
  name: string;
  /** Remote participant id; absent for the local tile. */
  participantId?: string;
  /** Makes the tile a button (click, Enter or Space): put on stage (pin) / unpin. */
  onActivate?: () => void;
}

export const PAUSED_TEXT = 'Your video is paused — nobody is watching';
export const SUSPENDED_TEXT = 'Paused — low bandwidth';
export const CANNOT_DECRYPT_TEXT = 'Cannot decrypt — end-to-end encrypted with another key';

export class Tile {
  readonly el: HTMLDivElement;
  private video: HTMLVideoElement;
  /** A video being readied off screen to replace the shown one (setVideoTrack). */
  private standby: HTMLVideoElement | null = null;
  private readonly audio: HTMLAudioElement | null;
  private readonly nameEl: HTMLSpanElement;
  private readonly initials: HTMLSpanElement;
  private readonly pausedNote: HTMLDivElement | null;
  private readonly suspendedNote: HTMLDivElement | null;
  private readonly layer: HTMLSpanElement | null;
  private readonly quality: HTMLSpanElement | null;
  private readonly level: HTMLSpanElement;
  private readonly pinnable: boolean;
  private qualityText = '';
  private name = '';
  private videoTrack: MediaStreamTrack | null = null;
  private audioTrack: MediaStreamTrack | null = null;
  /** End-to-end encrypted media we cannot decrypt: neither played nor shown. */
  private undecryptable = false;
  private decryptNote: HTMLDivElement | null = null;

  constructor(opts: TileOptions) {
    const local = opts.participantId === undefined;
    this.video = videoElement();
    this.audio = local ? null : h('audio', { attrs: { autoplay: '' } });
    if (this.audio) this.audio.autoplay = true;
    this.nameEl = h('span', { class: 'name' });
    this.initials = h('span', { class: 'initials' });
    const micOff = icon(icons.micOff);
    micOff.classList.add('mic-off');
    micOff.title = 'Microphone muted';
    const camOff = icon(icons.camOff);
    camOff.classList.add('cam-off');
    camOff.title = 'Camera off';
    const pin = icon(icons.pin);
    pin.classList.add('pin-badge');
    this.pausedNote = local ? h('div', { class: 'paused-note', text: PAUSED_TEXT }) : null;
    if (this.pausedNote) this.pausedNote.hidden = true;
    this.suspendedNote = local ? null : h('div', { class: 'suspended-note', text: SUSPENDED_TEXT });
    if (this.suspendedNote) this.suspendedNote.hidden = true;
    this.layer = local ? null : h('span', { class: 'layer' });
    if (this.layer) this.layer.hidden = true;
    this.quality = local ? null : h('span', { class: 'quality' });
    if (this.quality) this.quality.hidden = true;
    this.level = h('span', { class: 'level', attrs: { 'aria-hidden': 'true' } });
    this.level.hidden = true;

    this.el = h(
      'div',
      { class: local ? 'tile local no-video' : 'tile no-video' },
      this.video,
      this.audio,
      h('div', { class: 'avatar' }, this.initials),
      this.pausedNote,
      this.suspendedNote,
      pin,
      this.quality,
      h('div', { class: 'label' }, micOff, camOff, this.level, this.nameEl, this.layer),
    );
    if (local) this.el.setAttribute('role', 'group');
    this.pinnable = opts.onActivate !== undefined;
    if (opts.onActivate) {
      const activate = opts.onActivate;
      this.el.classList.add('pinnable');
      this.el.tabIndex = 0;
      this.el.setAttribute('role', 'button');
      this.el.setAttribute('aria-pressed', 'false');
      this.el.addEventListener('click', () => activate());
      this.el.addEventListener('keydown', (ev) => {
        if (ev.key !== 'Enter' && ev.key !== ' ') return;
        ev.preventDefault();
        activate();
      });
    }
    if (opts.participantId !== undefined) {
      this.el.dataset['participantId'] = opts.participantId;
    }
    this.setName(opts.name);
  }

  setName(name: string): void {
    this.name = name;
    this.updateTitle();
    this.nameEl.textContent = name;
    this.nameEl.title = name;
    this.initials.textContent = initialsOf(name);
    this.initials.style.backgroundColor = colorOf(name);
  }

  /** Shown large. */
  setStage(on: boolean): void {
    this.el.classList.toggle('stage', on);
    this.updateTitle();
  }

  /** The dominant speaker. */
  setSpeaking(on: boolean): void {
    this.el.classList.toggle('speaking', on);
    this.updateTitle();
  }

  /** Remote tile: connection quality from the receiver's stats; null hides it. */
  setQuality(q: Quality | null): void {
    const el = this.quality;
    if (!el) return;
    el.hidden = q === null;
    this.qualityText = q === null ? '' : `connection ${q.level}`;
    if (q !== null && el.dataset['level'] !== q.level) {
      el.dataset['level'] = q.level;
      el.replaceChildren(icon(icons.signal), h('span', { text: q.level[0]?.toUpperCase() + q.level.slice(1) }));
    }
    el.title = q === null ? '' : `Connection ${q.level}${q.reasons.length > 0 ? `: ${q.reasons.join(', ')}` : ''}`;
    this.updateTitle();
  }

  /** Audio level 0…1 (from stats); null when unknown. Drawn as a bar beside the name. */
  setAudioLevel(level: number | null): void {
    this.level.hidden = level === null;
    // Perceived loudness: the square root spreads speech levels (0.01–0.3) over the bar.
    this.level.style.setProperty('--level', String(Math.min(1, Math.sqrt(level ?? 0))));
  }

  setPinned(on: boolean): void {
    this.el.classList.toggle('pinned', on);
    if (this.pinnable) this.el.setAttribute('aria-pressed', String(on));
    this.updateTitle();
  }

  /** Outside the forwarded set: a name/avatar tile, the video element hidden. */
  setForwarded(on: boolean): void {
    this.el.classList.toggle('not-forwarded', !on);
    this.video.hidden = !on;
  }

  /** Local tile: our video is paused because nobody receives it. */
  setPaused(on: boolean): void {
    this.el.classList.toggle('paused', on);
    if (this.pausedNote) this.pausedNote.hidden = !on;
  }

  /**
   * Remote tile: the SFU stopped sending this video for lack of bandwidth. The
   * avatar and a note show instead of the last (frozen) frame; the <video>
   * stays in place (only invisible), so the reported size does not change.
   */
  setSuspended(on: boolean): void {
    this.el.classList.toggle('suspended', on);
    if (this.suspendedNote) this.suspendedNote.hidden = !on;
  }

  /** Remote tile: the layer the SFU sends us (from `stats`); null hides it. */
  setLayer(v: VideoStats | null): void {
    const el = this.layer;
    if (!el) return;
    const shown = v !== null && v.encoding >= 0;
    el.hidden = !shown;
    el.textContent = shown ? `L${v.encoding}T${v.temporal}` : '';
    el.title = shown
      ? `Receiving simulcast encoding ${v.encoding} (0 = lowest), temporal layer ${v.temporal}, ${formatBitrate(v.bitrate)}`
      : '';
  }

  /**
   * The element whose rendered size is what we show of this participant's
   * video: the <video> while shown, else the tile (the video fills it).
   */
  get sizeElement(): HTMLElement {
    return this.video.hidden ? this.el : this.video;
  }

  /** Restarts video playback after the tile moved in the DOM. */
  replay(): void {
    if (this.video.srcObject) this.video.play()?.catch(() => {});
  }

  private updateTitle(): void {
    const c = this.el.classList;
    const states = [
      c.contains('speaking') && 'speaking',
      c.contains('audio-muted') && 'microphone muted',
      c.contains('video-muted') && 'camera off',
      this.qualityText,
      this.pinnable && c.contains('pinned') && 'pinned',
      this.undecryptable && 'cannot decrypt',
    ].filter(Boolean);
    this.el.setAttribute('aria-label', [this.name, ...states].join(', '));
    if (!this.pinnable) return;
    const pinned = this.el.classList.contains('pinned');
    const stage = this.el.classList.contains('stage');
    this.el.title =
      pinned && stage
        ? `Unpin ${this.name}`
        : pinned
          ? `Show ${this.name} large`
          : `Pin ${this.name}: show large and always receive their video`;
  }

  setMuted(audioMuted: boolean, videoMuted: boolean): void {
    this.el.classList.toggle('audio-muted', audioMuted);
    this.el.classList.toggle('video-muted', videoMuted);
    this.updateTitle();
  }

  setVideoTrack(track: MediaStreamTrack | null): void {
    if (track === this.videoTrack) return;
    const showing = this.videoTrack !== null && this.video.readyState >= 2 && !this.undecryptable;
    this.videoTrack = track;
    this.dropStandby();
    if (track && showing) return this.swapWhenReady(track);
    this.video.srcObject = track && !this.undecryptable ? new MediaStream([track]) : null;
    this.el.classList.toggle('no-video', track === null);
    if (track) this.video.play()?.catch(() => {});
  }

  /**
   * Another track replaces one that shows a picture (say the same participant
   * from the direct connection, or back from the SFU): it is readied in a
   * video element off screen and swapped in once it has a frame, so the tile
   * never shows an empty picture in between (at most 1 s later regardless).
   */
  private swapWhenReady(track: MediaStreamTrack): void {
    const next = videoElement();
    this.standby = next;
    next.srcObject = new MediaStream([track]);
    let timer: ReturnType<typeof setTimeout> | null = null;
    const swap = (): void => {
      if (this.standby !== next) return;
      this.standby = null;
      if (timer !== null) clearTimeout(timer);
      next.removeEventListener('loadeddata', swap);
      next.hidden = this.video.hidden;
      const old = this.video;
      old.replaceWith(next);
      this.video = next;
      old.srcObject = null;
      next.play()?.catch(() => {});
    };
    next.addEventListener('loadeddata', swap);
    timer = setTimeout(swap, 1000);
    next.play()?.catch(() => {});
    if (next.readyState >= 2) swap();
  }

  private dropStandby(): void {
    const s = this.standby;
    if (!s) return;
    this.standby = null;
    s.srcObject = null;
  }

  /**
   * Remote tile whose end-to-end encrypted media we cannot decrypt (no key, a
   * wrong key): says so, shows no picture and plays no sound.
   */
  setUndecryptable(on: boolean): void {
    if (on === this.undecryptable) return;
    this.undecryptable = on;
    if (on) this.dropStandby();
    if (!this.decryptNote) {
      this.decryptNote = h('div', { class: 'decrypt-note', text: CANNOT_DECRYPT_TEXT });
      this.el.append(this.decryptNote);
    }
    this.decryptNote.hidden = !on;
    this.el.classList.toggle('cannot-decrypt', on);
    this.video.srcObject = this.videoTrack && !on ? new MediaStream([this.videoTrack]) : null;
    if (this.videoTrack && !on) this.video.play()?.catch(() => {});
    if (this.audio) this.audio.muted = on;
    this.updateTitle();
  }

  /** Attaches remote audio; resolves false when autoplay policy blocked playback. */
  setAudioTrack(track: MediaStreamTrack | null): Promise<boolean> {
    const audio = this.audio;
    if (!audio || track === this.audioTrack) return Promise.resolve(true);
    this.audioTrack = track;
    audio.srcObject = track ? new MediaStream([track]) : null;
    if (!track) return Promise.resolve(true);
    return this.playAudio();
  }

  /** (Re)starts audio playback; resolves false when the browser refused. */
  playAudio(): Promise<boolean> {
    const audio = this.audio;
    if (!audio || !audio.srcObject) return Promise.resolve(true);
    return audio.play().then(
      () => true,
      (err: unknown) => !(err instanceof DOMException && err.name === 'NotAllowedError'),
    );
  }

  destroy(): void {
    this.dropStandby();
    this.video.srcObject = null;
    if (this.audio) this.audio.srcObject = null;
    this.el.remove();
  }
}

function videoElement(): HTMLVideoElement {
  const v = h('video', { class: 'video', attrs: { autoplay: '', playsinline: '' } });
  // Properties, not just attributes: `muted` as an attribute only sets the default.
  v.muted = true;
  v.autoplay = true;
  v.playsInline = true;
  return v;
}

function initialsOf(name: string): string {
  const words = name.trim().split(/\s+/).filter(Boolean);
  const letters = words.length > 1 ? [words[0], words[words.length - 1]] : [words[0]];
  return letters
    .map((w) => (w ? Array.from(w)[0] ?? '' : ''))
    .join('')
    .toUpperCase();
}

function colorOf(name: string): string {
  let hash = 0;
  for (const ch of name) hash = (hash * 31 + (ch.codePointAt(0) ?? 0)) >>> 0;
  return `hsl(${hash % 360} 45% 42%)`;
}
