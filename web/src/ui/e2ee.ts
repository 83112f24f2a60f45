// End-to-end encryption on the page (docs/e2ee.md): the lock badge, shown
// while we and every participant in the room say we encrypt, and "cannot
// decrypt" on the tiles of participants whose media we cannot decrypt — every
// encrypting participant when we have no passphrase, and those whose frames the
// worker has not decrypted for a while when we have one (a wrong passphrase).

import type { Conference, Participant } from '../protocol';
import { screenSource } from '../protocol';
import type { E2ee } from '../protocol/e2ee/client';
import { h } from './dom';
import type { Tile } from './tile';

export function e2eeView(conference: Conference, tileOf: (id: string) => Tile | undefined, e2ee: E2ee | null): HTMLElement {
  const lock = h('span', {
    class: 'e2ee-lock',
    text: '🔒 End-to-end encrypted',
    attrs: { role: 'img', 'aria-label': 'Everyone in the room encrypts end to end', title: 'Everyone in the room encrypts end to end' },
  });
  const people = new Map<string, Participant>();
  // What the worker said of each participant's audio and video (false: cannot decrypt).
  const decrypting = new Map<string, { audio?: boolean; video?: boolean }>();

  const cannotDecrypt = (p: Participant): boolean => {
    if (!p.e2ee) return false;
    if (!e2ee) return true;
    const d = decrypting.get(p.id) ?? {};
    return d.video === false || (d.audio === false && d.video !== true);
  };
  const render = (id: string) => {
    const p = people.get(id);
    const on = p ? cannotDecrypt(p) : false;
    tileOf(id)?.setUndecryptable(on);
    tileOf(screenSource(id))?.setUndecryptable(on);
  };
  const renderLock = () => {
    lock.hidden = !e2ee || [...people.values()].some((p) => !p.e2ee);
  };

  const upsert = ({ participant }: { participant: Participant }) => {
    people.set(participant.id, participant);
    render(participant.id);
    renderLock();
  };
  conference.on('participant-joined', upsert);
  conference.on('participant-updated', upsert);
  conference.on('participant-left', ({ id }) => {
    people.delete(id);
    decrypting.delete(id);
    renderLock();
  });
  // Tiles may be made again (a share starting): restate on every track.
  conference.on('track-added', ({ participantId }) => {
    for (const p of people.values()) if (p.id === participantId || p.screen === participantId) render(p.id);
  });
  if (e2ee) {
    e2ee.onStatus = (owner, kind, ok) => {
      decrypting.set(owner, { ...decrypting.get(owner), [kind]: ok });
      render(owner);
    };
  }
  renderLock();
  return lock;
}
