// Podium conference page — entry point of dist/podium.js.
//
// Routes:
//   /                         join form (room, display name)
//   /<room>?name=<name>       joins <room> directly with camera and microphone
//   /<room>                   join form with the room prefilled
//   optional `video=WxH` (e.g. video=320x180) sets the requested camera size
//   (default 1280x720); it is carried over by the join form.
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
//   .status[data-state]                 connection status line; data-state is one of
//                                       idle | connecting | connected | reconnecting | closed
//   .room-title                         the room name
//   button.mic / button.cam / button.leave   the controls
//   button.enable-sound                 shown when autoplay policy blocked remote audio
//   form.join-form [name=room] [name=name]   the join form
//
// Test hook: once a room page starts,
//   window.podium = { conference, stats: () => conference.stats(),
//                     id: () => own participant id or null, state: () => connection state }

import { showJoinForm } from './form';
import { showRoom } from './room';
import { route } from './route';

function main(): void {
  const root = document.getElementById('app') ?? document.body;
  const r = route(location.pathname, location.search);
  if (r.page === 'form') {
    showJoinForm(root, r);
    return;
  }
  const home = () => location.assign('/');
  showRoom(root, { room: r.room, name: r.name, videoSize: r.videoSize, home }).catch((err: unknown) => {
    console.error('[podium]', err);
    root.textContent = `Podium failed to start: ${String(err)}`;
  });
}

main();
