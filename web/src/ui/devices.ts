// Cameras, microphones and speakers: listing them, opening one, a microphone
// level meter, the speaker choice (HTMLMediaElement.setSinkId where the browser
// has it), and the in-call panel that switches devices without renegotiating
// (Conference.replaceLocalTrack).

import type { Conference } from '../protocol';
import { h } from './dom';
import type { VideoSize } from './media';

export type DeviceKind = 'camera' | 'mic' | 'speaker';

const MEDIA_KIND: Record<DeviceKind, MediaDeviceKind> = { camera: 'videoinput', mic: 'audioinput', speaker: 'audiooutput' };
const LABEL: Record<DeviceKind, string> = { camera: 'Camera', mic: 'Microphone', speaker: 'Speaker' };

/** The devices chosen; undefined = the browser's default. */
export interface DeviceChoice {
  camera?: string;
  mic?: string;
  speaker?: string;
}

/** The devices of one kind (labels only once the page may use camera or microphone). */
export async function listDevices(kind: DeviceKind): Promise<MediaDeviceInfo[]> {
  const md = navigator.mediaDevices;
  if (!md || typeof md.enumerateDevices !== 'function') return [];
  try {
    return (await md.enumerateDevices()).filter((d) => d.kind === MEDIA_KIND[kind] && d.deviceId !== '');
  } catch {
    return [];
  }
}

/** Whether audio output can be chosen here (Chromium; Firefox behind a permission). */
export function canChooseSpeaker(): boolean {
  return typeof HTMLMediaElement !== 'undefined' && 'setSinkId' in HTMLMediaElement.prototype;
}

export function videoConstraints(size: VideoSize, deviceId?: string): MediaTrackConstraints {
  const c: MediaTrackConstraints = { width: { ideal: size.width }, height: { ideal: size.height }, frameRate: { ideal: 30 } };
  if (deviceId) c.deviceId = { exact: deviceId };
  return c;
}

/** Opens one camera or microphone track. */
export async function openTrack(kind: 'camera' | 'mic', deviceId: string | undefined, size: VideoSize): Promise<MediaStreamTrack> {
  const constraints: MediaStreamConstraints =
    kind === 'camera' ? { video: videoConstraints(size, deviceId) } : { audio: deviceId ? { deviceId: { exact: deviceId } } : true };
  const stream = await navigator.mediaDevices.getUserMedia(constraints);
  const track = stream.getTracks()[0];
  if (!track) throw new Error(`no ${kind} track`);
  return track;
}

/** The device id a live track comes from, if the browser says. */
export function trackDevice(track: MediaStreamTrack | undefined | null): string | undefined {
  const id = track && typeof track.getSettings === 'function' ? track.getSettings().deviceId : undefined;
  return id || undefined;
}

/** Plays every audio and video element under root on the speaker sinkId ("" = default). */
export async function applySpeaker(root: ParentNode, sinkId: string): Promise<void> {
  if (!canChooseSpeaker()) return;
  const els = Array.from(root.querySelectorAll<HTMLMediaElement>('audio, video'));
  await Promise.all(
    els.map(async (el) => {
      const withSink = el as HTMLMediaElement & { sinkId?: string; setSinkId?: (id: string) => Promise<void> };
      if (withSink.sinkId === sinkId || !withSink.setSinkId) return;
      try {
        await withSink.setSinkId(sinkId);
      } catch (err) {
        console.warn('[podium] setSinkId', err);
      }
    }),
  );
}

/**
 * A `<select name="camera|mic|speaker">` in a labelled `label.device`; the
 * options come from enumerateDevices (refresh() after permission or a
 * devicechange). onChange gets the chosen device id.
 */
export class DeviceSelect {
  readonly el: HTMLLabelElement;
  readonly select: HTMLSelectElement;

  constructor(
    readonly kind: DeviceKind,
    onChange: (deviceId: string) => void,
  ) {
    this.select = h('select', { attrs: { name: kind } });
    this.el = h('label', { class: `device ${kind}` }, h('span', { text: LABEL[kind] }), this.select);
    this.select.addEventListener('change', () => onChange(this.select.value));
  }

  /** Lists the devices, selecting current (a device id) when it is among them. */
  async refresh(current: string | undefined): Promise<void> {
    const devices = await listDevices(this.kind);
    const options = devices.map((d, i) => h('option', { text: d.label || `${LABEL[this.kind]} ${i + 1}`, attrs: { value: d.deviceId } }));
    if (options.length === 0) options.push(h('option', { text: 'Default', attrs: { value: '' } }));
    this.select.replaceChildren(...options);
    if (current !== undefined && devices.some((d) => d.deviceId === current)) this.select.value = current;
    this.select.disabled = devices.length < 2;
  }

  get value(): string {
    return this.select.value;
  }
}

/**
 * A microphone level meter: a WebAudio AnalyserNode on the track, its RMS level
 * (0–1, perceptual scale) drawn as `--level` of `.level-meter` on every frame.
 */
export class LevelMeter {
  readonly el: HTMLDivElement;
  private ctx: AudioContext | null = null;
  private frame = 0;
  private current = 0;

  constructor() {
    this.el = h('div', { class: 'level-meter', attrs: { role: 'meter', 'aria-label': 'Microphone level', 'aria-valuemin': '0', 'aria-valuemax': '100' } }, h('span'));
  }

  /** Measures track (null: stops). */
  attach(track: MediaStreamTrack | null): void {
    this.stop();
    if (!track || typeof AudioContext === 'undefined') return;
    const ctx = new AudioContext();
    this.ctx = ctx;
    const analyser = ctx.createAnalyser();
    analyser.fftSize = 1024;
    ctx.createMediaStreamSource(new MediaStream([track])).connect(analyser);
    // A context made before any user gesture starts suspended: resume on the first one.
    const resume = () => void ctx.resume().catch(() => {});
    resume();
    for (const ev of ['pointerdown', 'keydown']) document.addEventListener(ev, resume, { once: true });
    const data = new Float32Array(analyser.fftSize);
    const draw = () => {
      analyser.getFloatTimeDomainData(data);
      let sum = 0;
      for (const x of data) sum += x * x;
      const rms = Math.sqrt(sum / data.length);
      // −60 dBFS … 0 dBFS onto 0 … 1, smoothed on the way down.
      const level = Math.max(0, Math.min(1, 1 + (20 * Math.log10(rms + 1e-9)) / 60));
      this.current = Math.max(level, this.current * 0.85);
      this.el.style.setProperty('--level', this.current.toFixed(3));
      this.el.setAttribute('aria-valuenow', String(Math.round(this.current * 100)));
      this.frame = requestAnimationFrame(draw);
    };
    this.frame = requestAnimationFrame(draw);
  }

  /** The level last drawn, 0–1. */
  get level(): number {
    return this.current;
  }

  stop(): void {
    cancelAnimationFrame(this.frame);
    void this.ctx?.close().catch(() => {});
    this.ctx = null;
    this.current = 0;
    this.el.style.setProperty('--level', '0');
  }
}

export interface DevicesPanelOptions {
  conference: Conference;
  /** The published stream (the conference's localStream). */
  stream: MediaStream | null;
  videoSize: VideoSize;
  /** The speaker chosen before joining, if any. */
  speaker?: string;
  /** Where the remote audio plays: every media element under it follows the speaker choice. */
  mediaRoot: HTMLElement;
  /** A new camera track is published (to show it in the local preview). */
  onCamera(track: MediaStreamTrack): void;
  /** Something went wrong (shown to the user). */
  onProblem(text: string): void;
}

/**
 * The in-call device panel (`section.devices-panel`): camera, microphone and
 * speaker selects. A new camera or microphone is opened, published with
 * replaceTrack (same session, same participant id, same simulcast encodings)
 * and the old one stopped; the speaker applies to every remote audio element,
 * present and future.
 */
export class DevicesPanel {
  readonly el: HTMLElement;
  private readonly selects: Record<DeviceKind, DeviceSelect>;
  private readonly meter = new LevelMeter();
  private speaker: string;
  private busy: Promise<void> = Promise.resolve();

  constructor(private readonly opts: DevicesPanelOptions) {
    this.speaker = opts.speaker ?? '';
    this.selects = {
      camera: new DeviceSelect('camera', (id) => this.switchTo('camera', id)),
      mic: new DeviceSelect('mic', (id) => this.switchTo('mic', id)),
      speaker: new DeviceSelect('speaker', (id) => this.setSpeaker(id)),
    };
    this.selects.speaker.el.hidden = !canChooseSpeaker();
    this.el = h(
      'section',
      { class: 'side-section devices-panel', attrs: { 'aria-label': 'Devices' } },
      h('h2', { text: 'Devices' }),
      this.selects.camera.el,
      this.selects.mic.el,
      this.meter.el,
      this.selects.speaker.el,
    );
    this.el.hidden = true;
    if (typeof MutationObserver === 'function') {
      new MutationObserver(() => {
        if (this.speaker) void applySpeaker(opts.mediaRoot, this.speaker);
      }).observe(opts.mediaRoot, { childList: true, subtree: true });
    }
    navigator.mediaDevices?.addEventListener?.('devicechange', () => void this.refresh());
    if (this.speaker) void applySpeaker(opts.mediaRoot, this.speaker);
  }

  /** Shows or hides the panel; the level meter runs only while it shows. */
  setOpen(open: boolean): void {
    this.el.hidden = !open;
    if (open) {
      void this.refresh();
      this.meter.attach(this.opts.stream?.getAudioTracks()[0] ?? null);
    } else {
      this.meter.stop();
    }
  }

  async refresh(): Promise<void> {
    const s = this.opts.stream;
    await Promise.all([
      this.selects.camera.refresh(trackDevice(s?.getVideoTracks()[0])),
      this.selects.mic.refresh(trackDevice(s?.getAudioTracks()[0])),
      this.selects.speaker.refresh(this.speaker || undefined),
    ]);
  }

  /** Switches camera or microphone to deviceId; the steps run one at a time. */
  switchTo(kind: 'camera' | 'mic', deviceId: string): Promise<void> {
    this.busy = this.busy.then(async () => {
      const { conference, stream } = this.opts;
      if (!stream) return this.opts.onProblem('No camera or microphone was opened: nothing to switch.');
      let track: MediaStreamTrack;
      try {
        // The new device opens before the old one closes: no gap in what is sent.
        track = await openTrack(kind, deviceId || undefined, this.opts.videoSize);
      } catch (err) {
        return this.opts.onProblem(`Cannot open the ${LABEL[kind].toLowerCase()}: ${err instanceof Error ? err.message : String(err)}`);
      }
      try {
        (await conference.replaceLocalTrack(track))?.stop();
      } catch (err) {
        track.stop();
        return this.opts.onProblem(`Cannot switch the ${LABEL[kind].toLowerCase()}: ${String(err)}`);
      }
      if (kind === 'camera') this.opts.onCamera(track);
      else if (!this.el.hidden) this.meter.attach(track);
      await this.refresh();
    });
    return this.busy;
  }

  async setSpeaker(sinkId: string): Promise<void> {
    this.speaker = sinkId;
    await applySpeaker(this.opts.mediaRoot, sinkId);
  }
}
