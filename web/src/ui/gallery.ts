// The tiles of the conference page: one large "stage" tile (a pinned
// participant, else the dominant speaker) above a strip of thumbnails. It
// follows the protocol library's events only: participants and tracks,
// speaker, forwarded set, pins, the paused state of our own video, and the
// videos suspended for lack of bandwidth (with the layer received, from `stats`).
// Clicking a remote tile pins it and puts it on stage; clicking the pinned
// stage tile unpins it. It reports the rendered size and role of every remote
// video to the library (Conference.setConstraints) for simulcast.

import type { Conference, Participant, VideoConstraints } from '../protocol';
import { h } from './dom';
import { bestGrid, chooseStage } from './layout';
import { Tile } from './tile';

export interface GalleryOptions {
  conference: Conference;
  /** Our display name (the local tile shows "<name> (you)"). */
  name: string;
  localStream: MediaStream | null;
  /** Called with true when autoplay policy blocked some remote audio, false once none is. */
  onSoundBlocked?: (blocked: boolean) => void;
  /** Rendered size of an element in CSS pixels; default getBoundingClientRect. */
  measure?: (el: HTMLElement) => { width: number; height: number };
  /** Device pixels per CSS pixel; default window.devicePixelRatio. */
  pixelRatio?: () => number;
}

function boundingSize(el: HTMLElement): { width: number; height: number } {
  const r = el.getBoundingClientRect();
  return { width: r.width, height: r.height };
}

export class Gallery {
  /** `main.gallery`: the spotlight (stage tile) and the thumbnail strip. */
  readonly el: HTMLElement;
  readonly localTile: Tile;

  private readonly conference: Conference;
  private readonly spotlight: HTMLDivElement;
  private readonly strip: HTMLDivElement;
  private readonly tiles = new Map<string, Tile>();
  private readonly blocked = new Set<Tile>();
  private readonly onSoundBlocked: (blocked: boolean) => void;
  /** The remote participant on stage; null = the local tile (nobody else here). */
  private stageId: string | null = null;
  /** The participant put on stage by stage() (or a click); pinned while staged. */
  private stagedId: string | null = null;
  private readonly measure: (el: HTMLElement) => { width: number; height: number };
  private readonly pixelRatio: () => number;
  private readonly tileObserver: ResizeObserver | null = null;

  constructor(opts: GalleryOptions) {
    this.conference = opts.conference;
    this.onSoundBlocked = opts.onSoundBlocked ?? (() => {});
    this.measure = opts.measure ?? boundingSize;
    this.pixelRatio = opts.pixelRatio ?? (() => globalThis.devicePixelRatio || 1);
    this.spotlight = h('div', { class: 'spotlight' });
    this.strip = h('div', { class: 'strip' });
    this.el = h('main', { class: 'gallery' }, this.spotlight, this.strip);

    this.localTile = new Tile({ name: `${opts.name} (you)` });
    this.localTile.el.querySelector('video')?.classList.add('mirror');
    this.localTile.setVideoTrack(opts.localStream?.getVideoTracks()[0] ?? null);

    if (typeof ResizeObserver === 'function') {
      new ResizeObserver(() => this.relayout()).observe(this.spotlight);
      this.tileObserver = new ResizeObserver(() => this.reportConstraints());
    }
    this.watchPixelRatio();
    this.listen();
    // Participants already known (the conference may have started before us).
    for (const p of this.conference.participants.values()) this.addTile(p);
    this.update();
  }

  /** Reports again when the device pixel ratio changes (zoom, another screen): no resize is observed then. */
  private watchPixelRatio(): void {
    if (typeof globalThis.matchMedia !== 'function') return;
    try {
      const mq = globalThis.matchMedia(`(resolution: ${this.pixelRatio() || 1}dppx)`);
      mq.addEventListener(
        'change',
        () => {
          this.reportConstraints();
          this.watchPixelRatio();
        },
        { once: true },
      );
    } catch {
      // no media queries: sizes are still reported on every resize
    }
  }

  /** Retries remote audio playback (after a user gesture). */
  retryAudio(): void {
    for (const tile of [...this.blocked]) void tile.playAudio().then((ok) => this.audioResult(tile, ok));
  }

  /** The remote participant shown large, or null when the local tile is. */
  get stage(): string | null {
    return this.stageId;
  }

  /**
   * Pins a remote participant and shows them large (what a click on their tile
   * does); they keep the stage over the dominant speaker until unstage(). The
   * participant staged before is unpinned.
   */
  putOnStage(id: string): void {
    const c = this.conference;
    if (id === '' || id === c.id) return;
    const before = this.stagedId;
    this.stagedId = id;
    c.pin(id); // first: the `pinned` events below must already list it
    if (before !== null && before !== id) c.unpin(before);
    this.update();
  }

  /** Unpins a participant; the stage returns to the other pins or the dominant speaker. */
  unstage(id: string): void {
    if (this.stagedId === id) this.stagedId = null;
    this.conference.unpin(id);
    this.update();
  }

  /** Fits the stage tile into the spotlight. */
  relayout(): void {
    const g = bestGrid(1, this.spotlight.clientWidth, this.spotlight.clientHeight, 16 / 9, 0);
    if (g.tileWidth > 0) this.spotlight.style.setProperty('--stage-w', `${g.tileWidth}px`);
    this.el.dataset['count'] = String(this.tiles.size + 1);
  }

  // ---- events --------------------------------------------------------------

  private listen(): void {
    const c = this.conference;
    c.on('welcome', ({ id }) => {
      this.localTile.el.dataset['selfId'] = id;
      this.update();
    });
    c.on('participant-joined', ({ participant }) => this.addTile(participant));
    c.on('participant-updated', ({ participant }) => this.addTile(participant));
    c.on('participant-left', ({ id }) => this.removeTile(id));
    c.on('track-added', ({ participantId, kind, track }) => {
      const tile = this.tiles.get(participantId);
      if (!tile) return; // attached when the participant becomes known
      if (kind === 'video') tile.setVideoTrack(track);
      else void tile.setAudioTrack(track).then((ok) => this.audioResult(tile, ok));
    });
    c.on('track-removed', ({ participantId, kind }) => {
      const tile = this.tiles.get(participantId);
      if (!tile) return;
      if (kind === 'video') tile.setVideoTrack(null);
      else void tile.setAudioTrack(null).then((ok) => this.audioResult(tile, ok));
    });
    c.on('speaker', () => this.update());
    c.on('forwarded', () => this.update());
    c.on('pinned', ({ ids }) => {
      // Unpinned through the library (or gone): no longer staged.
      if (this.stagedId !== null && !ids.includes(this.stagedId)) this.stagedId = null;
      this.update();
    });
    c.on('video-paused', ({ paused }) => this.localTile.setPaused(paused));
    c.on('suspended', () => this.update());
    c.on('bandwidth', () => this.showLayers());
  }

  private addTile(p: Participant): void {
    let tile = this.tiles.get(p.id);
    const created = !tile;
    if (!tile) {
      const id = p.id;
      const t = new Tile({ name: p.name, participantId: id, onActivate: () => this.activate(id) });
      tile = t;
      this.tiles.set(id, t);
      this.tileObserver?.observe(t.el);
      const tracks = this.conference.tracks(id);
      t.setVideoTrack(tracks.video?.track ?? null);
      void t.setAudioTrack(tracks.audio?.track ?? null).then((ok) => this.audioResult(t, ok));
    }
    tile.setName(p.name);
    tile.setMuted(p.audioMuted, p.videoMuted);
    if (created) this.update();
  }

  private removeTile(id: string): void {
    const tile = this.tiles.get(id);
    if (!tile) return;
    this.tiles.delete(id);
    this.tileObserver?.unobserve(tile.el);
    if (this.stagedId === id) this.stagedId = null;
    this.audioResult(tile, true);
    tile.destroy();
    this.update();
  }

  /** A click on a remote tile: the pinned stage tile is unpinned, any other one put on stage. */
  private activate(id: string): void {
    if (this.stageId === id && this.conference.pinned.includes(id)) this.unstage(id);
    else this.putOnStage(id);
  }

  private audioResult(tile: Tile, ok: boolean): void {
    const before = this.blocked.size > 0;
    const current = this.tiles.get(tile.el.dataset['participantId'] ?? '') === tile;
    if (ok || !current) this.blocked.delete(tile);
    else this.blocked.add(tile);
    const after = this.blocked.size > 0;
    if (before !== after) this.onSoundBlocked(after);
  }

  // ---- rendering -----------------------------------------------------------

  /** Recomputes the stage and every tile's classes, and places the tiles. */
  private update(): void {
    const c = this.conference;
    const self = c.id;
    const speaker = c.dominantSpeaker;
    const pinned = new Set(c.pinned);
    this.stageId = chooseStage({
      previous: this.stageId,
      speaker,
      self,
      present: [...this.tiles.keys()],
      forwarded: c.forwarded,
      pinned: c.pinned,
      staged: this.stagedId,
    });

    for (const [id, tile] of this.tiles) {
      tile.setStage(id === this.stageId);
      tile.setSpeaking(id === speaker);
      tile.setPinned(pinned.has(id));
      tile.setForwarded(c.isForwarded(id));
      tile.setSuspended(c.isForwarded(id) && c.isSuspended(id));
    }
    this.localTile.setStage(this.stageId === null);
    this.localTile.setSpeaking(speaker !== null && speaker === self);
    this.localTile.setPaused(c.videoPaused);

    const stageTile = this.stageId === null ? this.localTile : this.tiles.get(this.stageId);
    const thumbs = [this.localTile, ...this.tiles.values()].filter((t) => t !== stageTile);
    const movedStage = place(this.spotlight, stageTile ? [stageTile.el] : []);
    const movedStrip = place(this.strip, thumbs.map((t) => t.el));
    this.strip.hidden = thumbs.length === 0;
    if (movedStage || movedStrip) {
      // Moving a playing media element can pause it in some browsers.
      for (const t of [this.localTile, ...this.tiles.values()]) t.replay();
    }
    this.relayout();
    this.showLayers();
    this.reportConstraints();
  }

  /** Shows on each forwarded, not suspended video the layer from the last `stats`. */
  private showLayers(): void {
    const c = this.conference;
    const videos = c.bandwidth?.videos ?? {};
    for (const [id, tile] of this.tiles) {
      const v = Object.hasOwn(videos, id) ? videos[id] : undefined;
      tile.setLayer(v && c.isForwarded(id) && !c.isSuspended(id) ? v : null);
    }
  }

  /**
   * Tells the library what we render of each remote video: its size in device
   * pixels and `stage` for the large tile, `thumbnail` for the others. A video
   * outside the forwarded set (hidden) counts as a thumbnail of its tile's
   * size; tiles not laid out (zero size) are left out. The library sends only
   * changes, collected over a short delay.
   */
  reportConstraints(): void {
    const dpr = this.pixelRatio() || 1;
    const videos: VideoConstraints = {};
    for (const [id, tile] of this.tiles) {
      const shown = this.conference.isForwarded(id);
      const size = this.measure(tile.sizeElement);
      const width = Math.round(size.width * dpr);
      const height = Math.round(size.height * dpr);
      if (!(width > 0 && height > 0)) continue;
      videos[id] = { width, height, role: shown && id === this.stageId ? 'stage' : 'thumbnail' };
    }
    if (Object.keys(videos).length > 0) this.conference.setConstraints(videos);
  }
}

/** Makes `els` the children of `parent`, in order, moving as little as possible. Returns whether anything moved. */
function place(parent: HTMLElement, els: HTMLElement[]): boolean {
  let moved = false;
  els.forEach((el, i) => {
    if (parent.children[i] !== el) {
      parent.insertBefore(el, parent.children[i] ?? null);
      moved = true;
    }
  });
  while (parent.children.length > els.length) {
    const last = parent.lastElementChild;
    if (!last) break;
    // Tiles that left the container were moved elsewhere (or destroyed).
    last.remove();
    moved = true;
  }
  return moved;
}
