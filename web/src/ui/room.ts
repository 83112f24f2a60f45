// The conference page. It only consumes the protocol library's API and events.

import {
  Conference,
  type BandwidthStats,
  type ConnectionState,
  type PcName,
  type RoomSettings,
  type VideoConstraints,
} from '../protocol';
import { BandwidthLog, bandwidthIndicator, type BandwidthLogEntry } from './bandwidth';
import { h, icon, icons } from './dom';
import { Gallery } from './gallery';
import { layoutControl } from './grid';
import { lastNControl } from './lastn';
import { shareButton } from './share';
import { invitePanel } from './invite';
import { openLocalMedia, type VideoSize } from './media';
import type { JoinChoice } from './prejoin';
import { sidePanels } from './side';
import { e2eeView } from './e2ee';
import { E2ee, e2eeMode, passphraseFromHash } from '../protocol/e2ee/client';

export interface RoomOptions {
  room: string;
  name: string;
  videoSize: VideoSize;
  /** Publish three simulcast encodings (default) or one. */
  simulcast?: boolean;
  /** Access token, for servers with access control; kept for reconnects. */
  token?: string;
  /** Called when the user wants to go back to the start page. */
  home(): void;
  /** What the pre-join panel opened and chose; without it the page opens camera and microphone itself. */
  prejoin?: JoinChoice;
  /** The E2EE passphrase given before joining (pre-join form); else the address's #e2ee=. */
  passphrase?: string | null;
  /** Join receive-only (`?role=audience`): no camera, microphone or publish connection. */
  audience?: boolean;
}

declare global {
  interface Window {
    podium?: {
      conference: Conference;
      stats: () => ReturnType<Conference['stats']>;
      id: () => string | null;
      state: () => ConnectionState;
      /** The dominant speaker's id (may be our own), null when nobody / unknown. */
      speaker: () => string | null;
      /** Ids whose video we receive, in priority order; null before the first `forwarded`. */
      forwarded: () => string[] | null;
      /** Our pins, in order. */
      pinned: () => string[];
      pin: (id: string) => void;
      unpin: (id: string) => void;
      setLastN: (n: number) => void;
      /** Whether the server paused our video (nobody receives it). */
      videoPaused: () => boolean;
      /** The room's settings from the last `room` message. */
      roomSettings: () => RoomSettings | null;
      /** RIDs of our encodings the server wants (last `layers`); null = all. */
      layers: () => string[] | null;
      /** Pins a participant and shows them large (as a click on their tile). */
      stage: (id: string) => void;
      /** Unpins a participant; the stage returns to the dominant-speaker rule. */
      unstage: (id: string) => void;
      /** The constraints the server was told in this session (merged). */
      constraints: () => VideoConstraints;
      /** The remote participant shown large, null when the local tile is. */
      onStage: () => string | null;
      /** Ids of forwarded videos the server suspended for lack of bandwidth (last `suspended`). */
      suspended: () => string[];
      /** The last `stats` message of this session without its type; null before one. */
      bandwidth: () => BandwidthStats | null;
      /** The last 600 `stats` messages (across reconnects), oldest first, each with `at` = Date.now() on arrival. */
      bandwidthLog: () => BandwidthLogEntry[];
    };
  }
}

export async function showRoom(root: HTMLElement, opts: RoomOptions): Promise<void> {
  document.title = `${opts.room} · Podium`;
  if (opts.audience) opts.prejoin?.media.stream?.getTracks().forEach((t) => t.stop());
  const media = opts.audience
    ? { stream: null, problem: null }
    : (opts.prejoin?.media ?? (await openLocalMedia(opts.videoSize)));
  const stream = media.stream;
  const hasAudio = (stream?.getAudioTracks().length ?? 0) > 0;
  const hasVideo = (stream?.getVideoTracks().length ?? 0) > 0;

  const passphrase = opts.passphrase ?? passphraseFromHash(location.hash);
  const e2ee = startE2ee(opts.room, passphrase);
  const conference = new Conference({
    room: opts.room,
    name: opts.name,
    localStream: stream,
    simulcast: opts.simulcast ?? true,
    token: opts.token,
    ...(opts.audience ? { audience: true } : {}),
    ...(e2ee ? { e2ee } : {}),
  });
  const bandwidthLog = new BandwidthLog(conference);
  window.podium = {
    conference,
    stats: () => conference.stats(),
    id: () => conference.id,
    state: () => conference.state,
    speaker: () => conference.dominantSpeaker,
    forwarded: () => conference.forwarded,
    pinned: () => conference.pinned,
    pin: (id) => conference.pin(id),
    unpin: (id) => conference.unpin(id),
    setLastN: (n) => conference.setLastN(n),
    videoPaused: () => conference.videoPaused,
    roomSettings: () => conference.roomSettings,
    layers: () => conference.videoLayers,
    constraints: () => conference.constraintsSent,
    // The gallery exists by the time a test calls these.
    stage: (id) => gallery.putOnStage(id),
    unstage: (id) => gallery.unstage(id),
    onStage: () => gallery.stage,
    suspended: () => conference.suspended,
    bandwidth: () => conference.bandwidth,
    bandwidthLog: () => bandwidthLog.list(),
  };

  // ---- static structure ----
  const status = h('div', { class: 'status', attrs: { 'data-state': 'connecting', role: 'status' } });
  const enableSound = h('button', { class: 'enable-sound', attrs: { type: 'button' } }, icon(icons.sound), 'Click to enable sound');
  enableSound.hidden = true;
  const notice = h('div', { class: 'notice', text: media.problem ?? '' });
  notice.hidden = media.problem === null;
  const showNotice = (text: string) => {
    notice.textContent = text;
    notice.hidden = false;
  };
  const gallery = new Gallery({
    conference,
    name: opts.name,
    localStream: stream,
    onSoundBlocked: (blocked) => {
      enableSound.hidden = !blocked;
    },
  });
  const localTile = gallery.localTile;
  const lock = e2eeView(conference, (id) => gallery.tile(id), e2ee);
  enableSound.addEventListener('click', () => gallery.retryAudio());

  const side = sidePanels({
    conference,
    stream,
    videoSize: opts.videoSize,
    gallery: gallery.el,
    ...(opts.prejoin?.speaker ? { speaker: opts.prejoin.speaker } : {}),
    onCamera: (track) => localTile.setVideoTrack(track),
    onProblem: showNotice,
  });

  const invite = invitePanel({
    room: opts.room,
    origin: location.origin,
    passphrase: e2ee ? passphrase : null,
    ...(e2ee ? { rotate: () => e2ee.rotate() } : {}),
    ...(navigator.clipboard ? { clipboard: navigator.clipboard } : {}),
  });
  const micBtn = h('button', { class: 'ctl mic', attrs: { type: 'button' } });
  const camBtn = h('button', { class: 'ctl cam', attrs: { type: 'button' } });
  const leaveBtn = h('button', { class: 'ctl leave', attrs: { type: 'button', title: 'Leave' } }, icon(icons.leave), h('span', { text: 'Leave' }));
  micBtn.disabled = !hasAudio;
  camBtn.disabled = !hasVideo;
  const share = shareButton(conference, showNotice);
  const viewerNote = h('div', { class: 'viewer-note', attrs: { role: 'note' }, text: 'Audience: watching only, your camera and microphone are not used' });
  viewerNote.hidden = true;

  const page = h(
    'div',
    { class: 'room' },
    h(
      'header',
      { class: 'topbar' },
      h('a', { class: 'brand', text: 'Podium', attrs: { href: '/' } }),
      h('h1', { class: 'room-title', text: opts.room }),
      status,
      viewerNote,
      lock,
      bandwidthIndicator(conference),
      enableSound,
    ),
    notice,
    gallery.el,
    side.el,
    invite.panel,
    h('footer', { class: 'controls' }, micBtn, camBtn, ...side.buttons, layoutControl(gallery), share, invite.button, lastNControl(conference, gallery), leaveBtn),
  );
  root.replaceChildren(page);

  gallery.relayout();

  // ---- status line ----
  const peers: Record<PcName, RTCPeerConnectionState> = { publish: 'new', subscribe: 'new' };
  let viewing = false; // see becomeViewer
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
        text = peers[viewing ? 'subscribe' : 'publish'] === 'connected' ? 'Connected' : 'Connecting media…';
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
  // Without the publish permission (role=audience, or a token without it) the
  // page is a viewer's: nothing of ours is sent, so no controls for it.
  const becomeViewer = () => {
    if (viewing) return;
    viewing = true;
    stopLocal();
    page.classList.add('audience');
    viewerNote.hidden = false;
    localTile.setVideoTrack(null);
    localTile.setName(`${opts.name} (you, audience)`);
    for (const b of [micBtn, camBtn, share, ...side.buttons.filter((b) => b.classList.contains('devices-toggle'))]) b.hidden = true;
    renderStatus();
  };
  if (opts.audience) becomeViewer();
  leaveBtn.addEventListener('click', () => conference.leave());
  window.addEventListener('pagehide', () => conference.leave());

  // ---- library events ----
  conference.on('welcome', ({ publish }) => {
    if (!publish) becomeViewer();
  });
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

  if (opts.prejoin) conference.mute(opts.prejoin.startMuted.audio, opts.prejoin.startMuted.video);
  renderControls();
  renderStatus();
  conference.join();
}

/** End-to-end encryption when there is a passphrase (#e2ee= or typed; never sent to the server). */
export function startE2ee(room: string, passphrase: string | null): E2ee | null {
  if (passphrase === null) return null;
  const mode = e2eeMode();
  if (mode === null) throw new Error('this browser cannot encrypt media end to end (it has no encoded transforms)');
  return new E2ee(passphrase, room, mode);
}

function showEnded(root: HTMLElement, opts: RoomOptions, message: string): void {
  const rejoin = h('button', { class: 'primary', text: 'Rejoin', attrs: { type: 'button' } });
  const home = h('button', { class: 'secondary', text: 'Home', attrs: { type: 'button' } });
  // A typed passphrase is not in the address: rejoin through the form, never unencrypted.
  const typed = opts.passphrase != null && passphraseFromHash(location.hash) === null;
  rejoin.addEventListener('click', () => (typed ? location.assign(`/${encodeURIComponent(opts.room)}`) : location.reload()));
  home.addEventListener('click', () => opts.home());
  root.replaceChildren(
    h(
      'div',
      { class: 'landing' },
      h('div', { class: 'card ended' }, h('h1', { text: opts.room }), h('p', { class: 'ended-message', text: message }), h('div', { class: 'actions' }, rejoin, home)),
    ),
  );
}
