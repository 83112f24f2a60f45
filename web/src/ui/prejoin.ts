// The pre-join panel beside the join form: camera preview, microphone level,
// camera / microphone / speaker choice, and "join muted" / "join with camera
// off", and the optional end-to-end encryption passphrase (the same as a
// link's #e2ee=; kept in memory, never in the address). The stream it opened is
// handed to the room page as it is.

import { h } from './dom';
import { canChooseSpeaker, DeviceSelect, LevelMeter, openTrack, trackDevice } from './devices';
import { openLocalMedia, type LocalMedia, type VideoSize } from './media';
import { passphraseFromHash } from '../protocol/e2ee/client';

/** What the user chose before joining. */
export interface JoinChoice {
  media: LocalMedia;
  startMuted: { audio: boolean; video: boolean };
  /** Audio output device id; undefined = the default. */
  speaker?: string;
  /** The typed end-to-end encryption passphrase; undefined = none typed. */
  passphrase?: string;
}

/** The passphrase to join with: the typed one, else the address's #e2ee=, else none. */
export function joinPassphrase(choice: JoinChoice, hash: string): string | null {
  return choice.passphrase ?? passphraseFromHash(hash);
}

/**
 * `section.prejoin`: `video.preview`, `.level-meter`, `select[name=camera|mic|speaker]`,
 * `input[name=join-muted]` and `input[name=join-camera-off]` (checkboxes),
 * `input[name=e2ee-passphrase]` (password).
 */
export class Prejoin {
  readonly el: HTMLElement;
  private readonly preview: HTMLVideoElement;
  private readonly meter = new LevelMeter();
  private readonly note: HTMLParagraphElement;
  private readonly muted: HTMLInputElement;
  private readonly cameraOff: HTMLInputElement;
  private readonly passphrase: HTMLInputElement;
  private readonly selects: { camera: DeviceSelect; mic: DeviceSelect; speaker: DeviceSelect };
  private media: LocalMedia = { stream: null, problem: null };
  /** Opening devices and switching them run one at a time; take() waits for them. */
  private busy: Promise<void>;

  constructor(private readonly size: VideoSize) {
    this.preview = h('video', { class: 'preview mirror', attrs: { autoplay: '', playsinline: '', 'aria-label': 'Camera preview' } });
    this.preview.muted = true;
    this.preview.autoplay = true;
    this.preview.playsInline = true;
    this.note = h('p', { class: 'prejoin-note', attrs: { role: 'status' } });
    this.muted = h('input', { attrs: { type: 'checkbox', name: 'join-muted' } });
    this.cameraOff = h('input', { attrs: { type: 'checkbox', name: 'join-camera-off' } });
    this.cameraOff.addEventListener('change', () => this.showPreview());
    this.passphrase = h('input', {
      attrs: { type: 'password', name: 'e2ee-passphrase', autocomplete: 'off', spellcheck: 'false', placeholder: 'Optional' },
    });
    this.selects = {
      camera: new DeviceSelect('camera', (id) => this.switchTo('camera', id)),
      mic: new DeviceSelect('mic', (id) => this.switchTo('mic', id)),
      speaker: new DeviceSelect('speaker', () => {}),
    };
    this.selects.speaker.el.hidden = !canChooseSpeaker();
    this.el = h(
      'section',
      { class: 'card prejoin', attrs: { 'aria-label': 'Camera and microphone' } },
      h('div', { class: 'preview-box' }, this.preview),
      this.meter.el,
      this.note,
      this.selects.camera.el,
      this.selects.mic.el,
      this.selects.speaker.el,
      h('label', { class: 'check' }, this.muted, h('span', { text: 'Join muted' })),
      h('label', { class: 'check' }, this.cameraOff, h('span', { text: 'Join with camera off' })),
      h('label', { class: 'e2ee-passphrase' }, h('span', { text: 'End-to-end encryption passphrase' }), this.passphrase),
    );
    this.busy = this.open();
  }

  private async open(): Promise<void> {
    this.media = await openLocalMedia(this.size);
    this.note.textContent = this.media.problem ?? '';
    this.note.hidden = this.media.problem === null;
    this.showPreview();
    this.meter.attach(this.media.stream?.getAudioTracks()[0] ?? null);
    await this.refresh();
  }

  private async refresh(): Promise<void> {
    const s = this.media.stream;
    await Promise.all([
      this.selects.camera.refresh(trackDevice(s?.getVideoTracks()[0])),
      this.selects.mic.refresh(trackDevice(s?.getAudioTracks()[0])),
      this.selects.speaker.refresh(undefined),
    ]);
  }

  private showPreview(): void {
    const video = this.media.stream?.getVideoTracks()[0];
    const on = video !== undefined && !this.cameraOff.checked;
    this.preview.srcObject = on ? new MediaStream([video]) : null;
    this.preview.hidden = !on;
  }

  private switchTo(kind: 'camera' | 'mic', deviceId: string): void {
    this.busy = this.busy.then(async () => {
      let track: MediaStreamTrack;
      try {
        track = await openTrack(kind, deviceId || undefined, this.size);
      } catch (err) {
        this.note.textContent = `Cannot open that device: ${err instanceof Error ? err.message : String(err)}`;
        this.note.hidden = false;
        return;
      }
      const stream = this.media.stream ?? new MediaStream();
      this.media = { stream, problem: this.media.problem };
      for (const old of kind === 'camera' ? stream.getVideoTracks() : stream.getAudioTracks()) {
        stream.removeTrack(old);
        old.stop();
      }
      stream.addTrack(track);
      if (kind === 'camera') this.showPreview();
      else this.meter.attach(track);
      await this.refresh();
    });
  }

  /** The stream and the choices, once pending device work is done; the panel lets go of the stream. */
  async take(): Promise<JoinChoice> {
    await this.busy;
    this.meter.stop();
    this.preview.srcObject = null;
    const speaker = this.selects.speaker.el.hidden ? '' : this.selects.speaker.value;
    const passphrase = this.passphrase.value;
    return {
      media: this.media,
      startMuted: { audio: this.muted.checked, video: this.cameraOff.checked },
      ...(speaker ? { speaker } : {}),
      ...(passphrase ? { passphrase } : {}),
    };
  }
}
