// Podium conference page — entry point of dist/podium.js.
//
// Routes:
//   /                         join form (room, display name) with the pre-join panel
//                             (camera preview, microphone level, camera / microphone /
//                             speaker choice, join muted, join with camera off)
//   /<room>?name=<name>       joins <room> directly with camera and microphone
//   /<room>                   join form and pre-join panel with the room prefilled
//   optional `video=WxH` (e.g. video=320x180) sets the requested camera size
//   (default 1280x720); it is carried over by the join form.
//   optional `simulcast=0` publishes one video encoding instead of the
//   simulcast ones (q/h/f from 960x540 up, q/h from 640x360, else one).
//   optional `role=audience` joins receive-only (kept by the join form): no
//   camera or microphone is opened and no publish connection made; the page
//   shows the room as a viewer (as it does when the token lacks `publish`).
//
// DOM contract (used by end-to-end tests; keep it stable):
//   .tile.local                         the local preview tile (no data-participant-id)
//   .tile[data-participant-id="<id>"]   one per remote participant, never duplicated;
//                                       i.e. remote tiles are `.tile:not(.local)`
//   .tile .name                         the display name in a tile
//   .tile video                         the tile's video (muted, autoplay, playsinline)
//   .tile audio                         remote tiles only: the participant's audio
//   .tile.audio-muted / .tile.video-muted   the participant's mute state
//   .tile.no-video                      no video track attached yet
//   .tile.stage                         the tile shown large (exactly one): the participant
//                                       you put on stage (click / podium.stage), else your
//                                       latest pin (one whose video you receive first), else
//                                       the dominant speaker; when that is yourself or nobody,
//                                       the previous occupant (else the first forwarded
//                                       participant); the local tile when alone
//   .tile.speaking                      the dominant speaker's tile (the local one too)
//   .tile.pinned                        a participant you pinned (shows a pin badge);
//                                       click (or Enter/Space on) a remote tile to pin it
//                                       and put it on stage (unpinning the one staged before);
//                                       click the pinned stage tile to unpin it; the local
//                                       tile is not pinnable
//   .tile.not-forwarded                 a participant outside your `forwarded` set: its
//                                       <video> is hidden (hidden attribute) and the
//                                       name/avatar shows; absent before any `forwarded`
//   .tile.local.paused                  the server paused your video (nobody watches);
//                                       .paused-note in it says so; the preview keeps running
//   .tile.suspended                     a forwarded participant whose video the server
//                                       suspended for lack of bandwidth (`suspended`): the
//                                       name/avatar shows, the <video> is invisible (not
//                                       hidden: its size is still reported), and
//                                       .suspended-note says "Paused — low bandwidth"
//   .tile .layer                        remote tiles: the layer received ("L2T1": simulcast
//                                       encoding, temporal layer) from the last `stats`;
//                                       hidden when none, not forwarded or suspended
//   .spotlight / .strip                 containers of the stage tile / the thumbnails
//   .gallery[data-layout]               speaker | grid; button.layout (aria-pressed = grid)
//                                       or the G key switches, kept for the call
//   .grid-tiles                         grid view: the tiles of the page shown (the local
//                                       tile first on page 1); other pages' tiles wait
//                                       hidden in .grid-offpage. The page's participants
//                                       are pinned and our Last N is the page's size, so
//                                       the SFU forwards exactly their videos
//   .grid-nav .page-label[data-page][data-pages]   "Page 1 of 2"; button.page-prev /
//                                       button.page-next or PageUp / PageDown turn pages
//   .tile .quality[data-level]          remote tiles: good | fair | poor from the receiver's
//                                       stats (loss, freezes, video not arriving), with a
//                                       text label; hidden until two samples
//   .tile .level                        audio level bar (--level 0…1) from inbound stats
//   .tile[aria-label]                   name and states (speaking, muted, connection …)
//   label.last-n select[name=last-n]    most videos to receive: 1 2 3 4 6 8 12 or -1 (All)
//   .status[data-state]                 connection status line; data-state is one of
//                                       idle | connecting | connected | reconnecting | closed
//   .bandwidth                          the server's downlink estimate ("↓ 2.4 Mb/s") from
//                                       `stats`; hidden until there is one
//   .room-title                         the room name
//   .room.audience / .viewer-note       we joined without the publish permission (role=audience
//                                       or the token's): the note says so; no mic, camera,
//                                       share or devices buttons; the local tile has no video
//   .tile[data-participant-id] is never made for an audience participant (`audience` in its
//                                       info); li.person .audience marks them in the list
//   button.mic / button.cam / button.leave   the controls
//   button.enable-sound                 shown when autoplay policy blocked remote audio
//   form.join-form [name=room] [name=name]   the join form (the page's first form)
//   section.prejoin video.preview .level-meter select[name=camera|mic|speaker]
//     input[name=join-muted] input[name=join-camera-off]
//     input[name=e2ee-passphrase]       the pre-join panel (the passphrase as #e2ee= gives it,
//                                       kept in memory only); joining
//                                       from it keeps the page (address becomes
//                                       /<room>?name=…) and publishes the previewed devices
//   button.hand[aria-pressed]           raise / lower our hand; .tile.hand-raised marks
//                                       a raised hand (ours on .tile.local)
//   button.people-toggle / section.people-panel ul.people li[data-participant-id]
//                                       the participants list (.hand while raised)
//   button.chat-toggle (.unread count) / section.chat-panel   the chat: ol.chat-log
//                                       (role log, aria-live) of li.chat-message[data-seq]
//                                       [data-from] with .chat-name, time.chat-time,
//                                       .chat-text (plain text); form.chat-form
//                                       textarea[name=chat-text] (Enter sends), .chat-error
//   button.invite[aria-expanded] / section.invite-panel[role=dialog]   input[name=invite-link]
//                                       (/<room>: no name, token or passphrase), button.copy-link;
//                                       with E2EE input[name=invite-passphrase] (password),
//                                       button.copy-passphrase, button.rotate-key (our frames
//                                       move to a new key id); .invite-status; Escape closes
//   button.devices-toggle / section.devices-panel select[name=camera|mic|speaker]
//                                       switch devices in the call (replaceTrack: same
//                                       session and participant id)
//
// Test hook: once a room page starts,
//   window.podium = { conference, stats: () => conference.stats(),
//                     id: () => own participant id or null, state: () => connection state,
//                     speaker: () => dominant speaker id (may be own) or null,
//                     forwarded: () => ids whose video you receive, or null before the
//                                      first `forwarded` message,
//                     pinned: () => your pins, pin(id), unpin(id),
//                     setLastN(n) (n ≥ 0, or -1 for all),
//                     videoPaused: () => whether the server paused your video,
//                     layers: () => RIDs from the last `layers` message, or null (all),
//                     roomSettings: () => {lastN, onStage} or null,
//                     stage(id): pin id and show it large, unstage(id): unpin it,
//                     constraints: () => {<id>: {width, height, role}} as last sent to
//                                      the server in this session (merged),
//                     suspended: () => ids of forwarded videos suspended for lack of
//                                      bandwidth (last `suspended`; [] before one),
//                     bandwidth: () => the last `stats` of this session without its type,
//                                      {estimate, allocated, switches, videos: {<id>:
//                                      {encoding, temporal, bitrate, suspended}}}, or null,
//                     bandwidthLog: () => the last 600 `stats` (across reconnects), oldest
//                                      first, each as bandwidth() plus `at` (Date.now() ms
//                                      on arrival) }
//   stats().outbound rows, one per video encoding with simulcast: kind, rid (null for
//   audio / a single encoding), active (false while paused or left out of `layers`;
//   null when unknown), frameWidth, frameHeight, bytesSent, framesEncoded,
//   qualityLimitationReason, scalabilityMode. stats().uplinkEstimate: the browser's
//   estimate of the publish uplink (b/s, 0 when unknown). stats().inbound rows: participantId,
//   kind, frameWidth, frameHeight, framesDecoded, freezeCount, pliCount, and
//   totalFreezesDuration / keyFramesDecoded when the browser reports them.
//   Remote videos' rendered sizes (device pixels) and roles (stage / thumbnail) are
//   sent as `constraints`, debounced (200 ms), only what changed.

import { showJoinForm } from './form';
import { parseVideoSize } from './media';
import { joinPassphrase, type JoinChoice } from './prejoin';
import { showRoom } from './room';
import { isAudience, roomUrl, route, withoutToken } from './route';

function main(): void {
  const root = document.getElementById('app') ?? document.body;
  const r = route(location.pathname, location.search);
  // An access token from the link (/<room>?token=…) leaves the address bar at once.
  const token = new URLSearchParams(location.search).get('token') ?? undefined;
  const clean = withoutToken(location.pathname, location.search, location.hash);
  if (clean !== null) history.replaceState(history.state, '', clean);
  const home = () => location.assign('/');
  const audience = isAudience(location.search);
  if (r.page === 'form') {
    const onJoin = (room: string, name: string, choice: JoinChoice) => {
      // A typed passphrase stays in memory; a link's #e2ee= stays in the address.
      const passphrase = joinPassphrase(choice, location.hash);
      history.replaceState(history.state, '', roomUrl(room, name, r.video, audience) + (choice.passphrase ? '' : location.hash));
      const videoSize = parseVideoSize(r.video);
      showRoom(root, { room, name, videoSize, simulcast: true, token, home, prejoin: choice, passphrase, audience }).catch(failed);
    };
    showJoinForm(root, { ...r, token, onJoin });
    return;
  }
  showRoom(root, { room: r.room, name: r.name, videoSize: r.videoSize, simulcast: r.simulcast, token, home, audience }).catch(failed);

  function failed(err: unknown): void {
    console.error('[podium]', err);
    root.textContent = `Podium failed to start: ${String(err)}`;
  }
}

main();
