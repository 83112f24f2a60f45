// One participant tile: video, audio (remote only), name and mute indicators.

import { h, icon, icons } from './dom';

export interface TileOptions {
  name: string;
  /** Remote participant id; absent for the local tile. */
  participantId?: string;
}

export class Tile {
  readonly el: HTMLDivElement;
  private readonly video: HTMLVideoElement;
  private readonly audio: HTMLAudioElement | null;
  private readonly nameEl: HTMLSpanElement;
  private readonly initials: HTMLSpanElement;
  private videoTrack: MediaStreamTrack | null = null;
  private audioTrack: MediaStreamTrack | null = null;

  constructor(opts: TileOptions) {
    const local = opts.participantId === undefined;
    this.video = h('video', { class: 'video', attrs: { autoplay: '', playsinline: '' } });
    // Properties, not just attributes: `muted` as an attribute only sets the default.
    this.video.muted = true;
    this.video.autoplay = true;
    this.video.playsInline = true;
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

    this.el = h(
      'div',
      { class: local ? 'tile local no-video' : 'tile no-video' },
      this.video,
      this.audio,
      h('div', { class: 'avatar' }, this.initials),
      h('div', { class: 'label' }, micOff, camOff, this.nameEl),
    );
    if (opts.participantId !== undefined) {
      this.el.dataset['participantId'] = opts.participantId;
    }
    this.setName(opts.name);
  }

  setName(name: string): void {
    this.nameEl.textContent = name;
    this.nameEl.title = name;
    this.initials.textContent = initialsOf(name);
    this.initials.style.backgroundColor = colorOf(name);
  }

  setMuted(audioMuted: boolean, videoMuted: boolean): void {
    this.el.classList.toggle('audio-muted', audioMuted);
    this.el.classList.toggle('video-muted', videoMuted);
  }

  setVideoTrack(track: MediaStreamTrack | null): void {
    if (track === this.videoTrack) return;
    this.videoTrack = track;
    this.video.srcObject = track ? new MediaStream([track]) : null;
    this.el.classList.toggle('no-video', track === null);
    if (track) this.video.play().catch(() => {});
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
    this.video.srcObject = null;
    if (this.audio) this.audio.srcObject = null;
    this.el.remove();
  }
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
