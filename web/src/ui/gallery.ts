// The tiles of the conference page: one large "stage" tile (a pinned
// participant, else the dominant speaker) above a strip of thumbnails. It
// follows the protocol library's events only: participants and tracks,
// speaker, forwarded set, pins, the paused state of our own video, and the
// videos suspended for lack of bandwidth (with the layer received, from `stats`).
// Clicking a remote tile pins it and puts it on stage; clicking the pinned
// stage tile unpins it. It reports the rendered size and role of every remote
// video to the library (Conference.setConstraints) for simulcast.
// In grid view (grid.ts) the tiles are paged instead, and the page shown is
// what the SFU is asked for: its participants pinned and our Last N set to
// its size, so exactly its videos are forwarded, each at its tile's size. The
// user's own pins and Last N come back in speaker view.
// Every second the receiver's stats give each remote tile its connection
// quality and audio level (quality.ts).

import type { Conference, ConferenceStats, Participant, VideoConstraints } from '../protocol';
import { h } from './dom';
import { GridView, place, type LayoutMode } from './grid';
import { bestGrid, chooseStage } from './layout';
import { pageRequest, restoreRequest, type PageRequest } from './paging';
import { audioLevels, QualityMeter } from './quality';
import { Tile } from './tile';
import { screenSource } from '../protocol';
import { shareTileOf } from './share';

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
  /** How often to read the receiver's stats for quality and audio level (ms); 0: never. Default 1000. */
  statsIntervalMs?: number;
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
  private readonly grid: GridView;
  private mode: LayoutMode = 'speaker';
  private readonly layoutListeners: ((mode: LayoutMode) => void)[] = [];
  /** The user's pins and Last N before grid view took them over. */
  private savedPins: string[] = [];
  private savedLastN: number | null = null;
  /** Sending a page request: the `pinned` events it causes must not start another. */
  private applying = false;
  private readonly meter = new QualityMeter();

  constructor(opts: GalleryOptions) {
    this.conference = opts.conference;
    this.onSoundBlocked = opts.onSoundBlocked ?? (() => {});
    this.measure = opts.measure ?? boundingSize;
    this.pixelRatio = opts.pixelRatio ?? (() => globalThis.devicePixelRatio || 1);
    this.spotlight = h('div', { class: 'spotlight' });
    this.strip = h('div', { class: 'strip' });
    this.grid = new GridView(this.measure, () => this.update());
    this.el = h('main', { class: 'gallery', attrs: { 'data-layout': 'speaker' } }, this.spotlight, this.strip, this.grid.el);

    this.localTile = new Tile({ name: `${opts.name} (you)` });
    this.localTile.el.querySelector('video')?.classList.add('mirror');
    this.localTile.setVideoTrack(opts.localStream?.getVideoTracks()[0] ?? null);

    if (typeof ResizeObserver === 'function') {
      new ResizeObserver(() => this.relayout()).observe(this.spotlight);
      // The grid's page size follows the window.
      new ResizeObserver(() => {
        if (this.mode === 'grid') this.update();
      }).observe(this.grid.tilesEl);
      this.tileObserver = new ResizeObserver(() => this.reportConstraints());
    }
    this.watchPixelRatio();
    this.listen();
    // Participants already known (the conference may have started before us).
    for (const p of this.conference.participants.values()) this.addParticipant(p);
    this.update();
    this.pollStats(opts.statsIntervalMs ?? 1000);
  }

  /** Speaker view (stage and strip) or grid view (pages of equal tiles). */
  get layout(): LayoutMode {
    return this.mode;
  }

  /**
   * Switches the layout. Grid view takes over our pins and Last N (see the
   * header); speaker view restores the ones the user had.
   */
  setLayout(mode: LayoutMode): void {
    if (mode === this.mode) return;
    const c = this.conference;
    if (mode === 'grid') {
      this.savedPins = c.pinned;
      this.savedLastN = c.lastN;
    }
    this.mode = mode;
    this.el.dataset['layout'] = mode;
    this.grid.el.hidden = mode !== 'grid';
    if (mode === 'speaker') {
      this.applyRequest(restoreRequest(c.pinned, this.savedPins, (id) => this.tiles.has(id), this.savedLastN));
    }
    this.update();
    for (const cb of this.layoutListeners) cb(mode);
  }

  onLayoutChange(cb: (mode: LayoutMode) => void): void {
    this.layoutListeners.push(cb);
  }

  /** Grid view: the page shown (0-based) and how many there are. */
  get gridPage(): { page: number; pages: number } {
    return this.grid.position;
  }

  /** Grid view: the previous (-1) or next (+1) page. */
  turnPage(step: number): void {
    if (this.mode === 'grid') this.grid.go(this.grid.position.page + step);
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
    c.on('participant-joined', ({ participant }) => this.addParticipant(participant));
    c.on('participant-updated', ({ participant }) => this.addParticipant(participant));
    c.on('participant-left', ({ id }) => {
      this.removeTile(screenSource(id));
      this.removeTile(id);
    });
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
      // Unpinned through the library (or gone): no longer staged. Grid view's
      // pins are its own: the staged participant comes back with speaker view.
      if (this.mode === 'speaker' && this.stagedId !== null && !ids.includes(this.stagedId)) this.stagedId = null;
      this.update();
    });
    c.on('room', () => this.update());
    c.on('video-paused', ({ paused }) => this.localTile.setPaused(paused));
    c.on('suspended', () => this.update());
    c.on('bandwidth', () => this.showLayers());
  }

  /** The tile of a remote participant or screen share. */
  tile(id: string): Tile | undefined {
    return this.tiles.get(id);
  }

  /** A participant's tile, and its screen share's while it shares (a tile of its own). */
  private addParticipant(p: Participant): void {
    if (p.audience) return; // receive-only: nothing to show (the participants list has them)
    this.addTile(p);
    const share = shareTileOf(p);
    if (share === null) return this.removeTile(screenSource(p.id));
    this.addTile(share);
    this.tiles.get(share.id)?.el.classList.add('screen');
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
    if (this.mode === 'grid') {
      // From the grid: show this participant large in speaker view.
      this.setLayout('speaker');
      this.putOnStage(id);
      return;
    }
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
    if (this.mode === 'grid') {
      this.updateGrid();
      return;
    }
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
      onStage: c.roomSettings?.onStage ?? [],
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

  /** Grid view: places the page shown and asks the SFU for exactly its videos. */
  private updateGrid(): void {
    const c = this.conference;
    const speaker = c.dominantSpeaker;
    for (const [id, tile] of this.tiles) {
      tile.setStage(false);
      tile.setSpeaking(id === speaker);
      tile.setPinned(false); // the page's pins are not the user's
      tile.setForwarded(c.isForwarded(id));
      tile.setSuspended(c.isForwarded(id) && c.isSuspended(id));
    }
    this.localTile.setStage(false);
    this.localTile.setSpeaking(speaker !== null && speaker === c.id);
    this.localTile.setPaused(c.videoPaused);
    // Screen shares first (a stable sort): a share starts on page 1, not after everyone.
    const isShare = (t: Tile) => (t.el.classList.contains('screen') ? 0 : 1);
    const remote = new Map([...this.tiles].sort(([, a], [, b]) => isShare(a) - isShare(b)).map(([id, t]) => [id, t.el]));
    const { ids, moved } = this.grid.layout(this.localTile.el, remote, c.roomSettings?.lastN ?? null);
    if (moved) for (const t of [this.localTile, ...this.tiles.values()]) t.replay();
    this.el.dataset['count'] = String(this.tiles.size + 1);
    this.applyRequest(pageRequest(ids, c.pinned));
    this.showLayers();
    this.reportConstraints();
  }

  /** Sends pins (unpins first: at most 16 pins) and Last N; no-op while already sending. */
  private applyRequest(r: PageRequest): void {
    if (this.applying) return;
    const c = this.conference;
    this.applying = true;
    try {
      for (const id of r.unpin) c.unpin(id);
      for (const id of r.pin) c.pin(id);
      if (c.lastN !== r.lastN) c.setLastN(r.lastN);
    } finally {
      this.applying = false;
    }
  }

  /** Reads the receiver's stats every `every` ms until the conference closes. */
  private pollStats(every: number): void {
    if (every <= 0) return;
    const timer = setInterval(() => {
      this.conference.stats().then(
        (s) => this.showStats(s),
        () => {},
      );
    }, every);
    this.conference.on('closed', () => clearInterval(timer));
  }

  /** Connection quality and audio level of each remote tile from one stats sample. */
  showStats(s: ConferenceStats): void {
    const c = this.conference;
    const expectsVideo = (id: string) =>
      c.isForwarded(id) && !c.isSuspended(id) && !(c.participants.get(id)?.videoMuted ?? false) && c.tracks(id).video !== undefined;
    const quality = this.meter.observe(s, expectsVideo);
    const levels = audioLevels(s);
    for (const [id, tile] of this.tiles) {
      const q = quality.get(id);
      if (q) tile.setQuality(q);
      tile.setAudioLevel(levels.get(id) ?? null);
    }
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
      const stage = shown && this.mode === 'speaker' && id === this.stageId;
      videos[id] = { width, height, role: stage ? 'stage' : 'thumbnail' };
    }
    if (Object.keys(videos).length > 0) this.conference.setConstraints(videos);
  }
}
