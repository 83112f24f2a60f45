// The conference page. It only consumes the protocol library's API and events.

import { Conference, type ConnectionState, type Participant, type PcName } from '../protocol';
import { h, icon, icons } from './dom';
import { bestGrid } from './layout';
import { openLocalMedia, type VideoSize } from './media';
import { Tile } from './tile';

export interface RoomOptions {
  room: string;
  name: string;
  videoSize: VideoSize;
  /** Called when the user wants to go back to the start page. */
  home(): void;
}

declare global {
  interface Window {
    podium?: {
      conference: Conference;
      stats: () => ReturnType<Conference['stats']>;
      id: () => string | null;
      state: () => ConnectionState;
    };
  }
}

export async function showRoom(root: HTMLElement, opts: RoomOptions): Promise<void> {
  document.title = `${opts.room} · Podium`;
  const media = await openLocalMedia(opts.videoSize);
  const stream = media.stream;
  const hasAudio = (stream?.getAudioTracks().length ?? 0) > 0;
  const hasVideo = (stream?.getVideoTracks().length ?? 0) > 0;

  const conference = new Conference({ room: opts.room, name: opts.name, localStream: stream });
  window.podium = {
    conference,
    stats: () => conference.stats(),
    id: () => conference.id,
    state: () => conference.state,
  };

  // ---- static structure ----
  const status = h('div', { class: 'status', attrs: { 'data-state': 'connecting', role: 'status' } });
  const enableSound = h('button', { class: 'enable-sound', attrs: { type: 'button' } }, icon(icons.sound), 'Click to enable sound');
  enableSound.hidden = true;
  const notice = h('div', { class: 'notice', text: media.problem ?? '' });
  notice.hidden = media.problem === null;
  const grid = h('div', { class: 'grid' });
  const stage = h('main', { class: 'stage' }, grid);

  const micBtn = h('button', { class: 'ctl mic', attrs: { type: 'button' } });
  const camBtn = h('button', { class: 'ctl cam', attrs: { type: 'button' } });
  const leaveBtn = h('button', { class: 'ctl leave', attrs: { type: 'button', title: 'Leave' } }, icon(icons.leave), h('span', { text: 'Leave' }));
  micBtn.disabled = !hasAudio;
  camBtn.disabled = !hasVideo;

  const page = h(
    'div',
    { class: 'room' },
    h(
      'header',
      { class: 'topbar' },
      h('a', { class: 'brand', text: 'Podium', attrs: { href: '/' } }),
      h('h1', { class: 'room-title', text: opts.room }),
      status,
      enableSound,
    ),
    notice,
    stage,
    h('footer', { class: 'controls' }, micBtn, camBtn, leaveBtn),
  );
  root.replaceChildren(page);

  // ---- tiles ----
  const localTile = new Tile({ name: `${opts.name} (you)` });
  localTile.el.querySelector('video')?.classList.add('mirror');
  localTile.setVideoTrack(stream?.getVideoTracks()[0] ?? null);
  grid.append(localTile.el);
  const tiles = new Map<string, Tile>();

  const relayout = () => {
    const cs = getComputedStyle(stage);
    const width = stage.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    const height = stage.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
    const gap = parseFloat(getComputedStyle(grid).columnGap) || 0;
    const g = bestGrid(tiles.size + 1, width, height, 16 / 9, gap);
    grid.style.setProperty('--cols', String(g.cols));
    grid.style.setProperty('--tile-w', `${g.tileWidth}px`);
    grid.dataset['count'] = String(tiles.size + 1);
  };
  new ResizeObserver(relayout).observe(stage);

  const blocked = new Set<Tile>();
  const audioResult = (tile: Tile, ok: boolean) => {
    if (ok) blocked.delete(tile);
    else blocked.add(tile);
    enableSound.hidden = blocked.size === 0;
  };
  enableSound.addEventListener('click', () => {
    for (const tile of [...blocked]) void tile.playAudio().then((ok) => audioResult(tile, ok));
  });

  const addTile = (p: Participant) => {
    let tile = tiles.get(p.id);
    if (!tile) {
      tile = new Tile({ name: p.name, participantId: p.id });
      tiles.set(p.id, tile);
      grid.append(tile.el);
      const t = tile;
      const tracks = conference.tracks(p.id);
      t.setVideoTrack(tracks.video?.track ?? null);
      void t.setAudioTrack(tracks.audio?.track ?? null).then((ok) => audioResult(t, ok));
      relayout();
    }
    tile.setName(p.name);
    tile.setMuted(p.audioMuted, p.videoMuted);
  };
  const removeTile = (id: string) => {
    const tile = tiles.get(id);
    if (!tile) return;
    tiles.delete(id);
    blocked.delete(tile);
    enableSound.hidden = blocked.size === 0;
    tile.destroy();
    relayout();
  };

  // ---- status line ----
  const peers: Record<PcName, RTCPeerConnectionState> = { publish: 'new', subscribe: 'new' };
  let closedMessage = '';
  const renderStatus = (extra?: string) => {
    const state = conference.state;
    status.dataset['state'] = state;
    let text: string;
    switch (state) {
      case 'idle':
      case 'connecting':
        text = 'Connecting…';
        break;
      case 'connected':
        text = peers.publish === 'connected' ? 'Connected' : 'Connecting media…';
        break;
      case 'reconnecting':
        text = 'Reconnecting…';
        break;
      case 'closed':
        text = closedMessage || 'Disconnected';
        break;
    }
    status.textContent = extra ? `${text} ${extra}` : text;
  };

  // ---- controls ----
  const renderControls = () => {
    const { audioMuted, videoMuted } = conference.localState;
    const micOff = audioMuted || !hasAudio;
    const camOff = videoMuted || !hasVideo;
    micBtn.replaceChildren(icon(micOff ? icons.micOff : icons.mic), h('span', { text: micOff ? 'Unmute' : 'Mute' }));
    camBtn.replaceChildren(icon(camOff ? icons.camOff : icons.cam), h('span', { text: camOff ? 'Start video' : 'Stop video' }));
    micBtn.classList.toggle('off', micOff);
    camBtn.classList.toggle('off', camOff);
    micBtn.setAttribute('aria-pressed', String(micOff));
    camBtn.setAttribute('aria-pressed', String(camOff));
    micBtn.title = micOff ? 'Unmute microphone' : 'Mute microphone';
    camBtn.title = camOff ? 'Turn camera on' : 'Turn camera off';
    localTile.setMuted(micOff, camOff);
  };
  micBtn.addEventListener('click', () => {
    const s = conference.localState;
    conference.mute(!s.audioMuted, s.videoMuted);
  });
  camBtn.addEventListener('click', () => {
    const s = conference.localState;
    conference.mute(s.audioMuted, !s.videoMuted);
  });
  const stopLocal = () => stream?.getTracks().forEach((t) => t.stop());
  leaveBtn.addEventListener('click', () => conference.leave());
  window.addEventListener('pagehide', () => conference.leave());

  // ---- library events ----
  conference.on('connection-state', () => renderStatus());
  conference.on('peer-state', ({ pc, state }) => {
    peers[pc] = state;
    renderStatus();
  });
  conference.on('reconnecting', ({ attempt }) => {
    peers.publish = 'new';
    peers.subscribe = 'new';
    renderStatus(attempt > 1 ? `(attempt ${attempt})` : undefined);
  });
  conference.on('welcome', ({ id }) => {
    localTile.el.dataset['selfId'] = id;
  });
  conference.on('participant-joined', ({ participant }) => addTile(participant));
  conference.on('participant-updated', ({ participant }) => addTile(participant));
  conference.on('participant-left', ({ id }) => removeTile(id));
  conference.on('track-added', ({ participantId, kind, track }) => {
    const tile = tiles.get(participantId);
    if (!tile) return; // attached when the participant becomes known
    if (kind === 'video') tile.setVideoTrack(track);
    else void tile.setAudioTrack(track).then((ok) => audioResult(tile, ok));
  });
  conference.on('track-removed', ({ participantId, kind }) => {
    const tile = tiles.get(participantId);
    if (!tile) return;
    if (kind === 'video') tile.setVideoTrack(null);
    else void tile.setAudioTrack(null).then((ok) => audioResult(tile, ok));
  });
  conference.on('local-state', renderControls);
  conference.on('error', ({ code, message, source }) => {
    console.warn(`[podium] ${source} error ${code}: ${message}`);
  });
  conference.on('closed', ({ reason, message }) => {
    stopLocal();
    closedMessage =
      reason === 'left' ? 'You left the room' : reason === 'bye' ? `Session ended: ${message}` : `Disconnected: ${message}`;
    renderStatus();
    showEnded(root, opts, closedMessage);
  });

  renderControls();
  renderStatus();
  relayout();
  conference.join();
}

function showEnded(root: HTMLElement, opts: RoomOptions, message: string): void {
  const rejoin = h('button', { class: 'primary', text: 'Rejoin', attrs: { type: 'button' } });
  const home = h('button', { class: 'secondary', text: 'Home', attrs: { type: 'button' } });
  rejoin.addEventListener('click', () => location.reload());
  home.addEventListener('click', () => opts.home());
  root.replaceChildren(
    h(
      'div',
      { class: 'landing' },
      h('div', { class: 'card ended' }, h('h1', { text: opts.room }), h('p', { class: 'ended-message', text: message }), h('div', { class: 'actions' }, rejoin, home)),
    ),
  );
}
