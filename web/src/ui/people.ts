// Raised hands and the participants list: the raise-hand button, the
// `section.people-panel` list, and the `hand-raised` mark on tiles.

import type { Conference, Participant } from '../protocol';
import { h, icon } from './dom';

const svg = (body: string) =>
  `<svg viewBox="0 0 24 24" width="20" height="20" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round">${body}</svg>`;
const handIcon = svg(
  '<path d="M18 11V6a2 2 0 0 0-4 0v5"/><path d="M14 10V4a2 2 0 0 0-4 0v6"/><path d="M10 10.5V6a2 2 0 0 0-4 0v8"/><path d="M18 8a2 2 0 1 1 4 0v6a8 8 0 0 1-8 8h-2c-2.8 0-4.5-.9-6-2.4l-3.6-3.6a2 2 0 0 1 2.8-2.8L7 15"/>',
);
const peopleIcon = svg('<circle cx="9" cy="8" r="4"/><path d="M2 21v-1a7 7 0 0 1 14 0v1"/><path d="M16 4a4 4 0 0 1 0 8"/><path d="M22 21v-1a7 7 0 0 0-4-6.3"/>');

/**
 * `button.hand` raises and lowers our hand (aria-pressed); `button.people-toggle`
 * opens `section.people-panel`, whose `ul.people` has one
 * `li[data-participant-id]` per participant (ours first, with `.self`), raised
 * hands first after it, each with `.hand` while raised. Tiles of participants
 * with a raised hand (ours: `.tile.local`) carry `.hand-raised`; `.hand-note`
 * (aria-live) says who raised a hand. A big room lists only some of its
 * participants: `button.people-more` then pages through the rest into
 * `ul.people-rest` (a snapshot, from list-participants).
 */
export class PeoplePanel {
  readonly el: HTMLElement;
  readonly handButton: HTMLButtonElement;
  readonly button: HTMLButtonElement;
  private readonly list: HTMLUListElement;
  private readonly note: HTMLParagraphElement;
  private readonly count: HTMLSpanElement;
  private readonly heading: HTMLHeadingElement;
  private readonly rest: HTMLUListElement;
  private readonly more: HTMLButtonElement;
  private next: string | null = null; // the next page's cursor; null: none asked for, '': the last came

  constructor(
    private readonly conference: Conference,
    private readonly tiles: HTMLElement,
    private readonly onToggle: (open: boolean) => void,
  ) {
    this.list = h('ul', { class: 'people' });
    this.heading = h('h2', { text: 'Participants' });
    this.rest = h('ul', { class: 'people-rest' });
    this.more = h('button', { class: 'people-more', attrs: { type: 'button' } });
    this.more.addEventListener('click', () => conference.listParticipants(this.next ?? ''));
    this.note = h('p', { class: 'hand-note sr-only', attrs: { 'aria-live': 'polite' } });
    this.el = h('section', { class: 'side-section people-panel', attrs: { id: 'people-panel', 'aria-label': 'Participants' } }, this.heading, this.list, this.rest, this.more, this.note);
    this.el.hidden = true;
    this.handButton = h('button', { class: 'ctl compact hand', attrs: { type: 'button', 'aria-pressed': 'false' } }, icon(handIcon), h('span', { text: 'Raise hand' }));
    this.handButton.addEventListener('click', () => conference.raiseHand(!conference.localState.handRaised));
    this.count = h('span', { class: 'unread', attrs: { 'aria-hidden': 'true' } });
    this.count.hidden = true;
    this.button = h(
      'button',
      { class: 'ctl compact people-toggle', attrs: { type: 'button', 'aria-controls': 'people-panel', 'aria-expanded': 'false', title: 'Participants' } },
      icon(peopleIcon),
      h('span', { text: 'People' }),
      this.count,
    );
    this.button.addEventListener('click', () => this.setOpen(this.el.hidden));

    const render = () => this.render();
    conference.on('welcome', render);
    conference.on('participant-joined', render);
    conference.on('participant-left', render);
    conference.on('local-state', render);
    conference.on('participant-count', () => {
      if (this.next === '') this.next = null; // the room changed since the last page: offer them again
      render();
    });
    conference.on('participant-page', ({ cursor, participants, next }) => {
      if (cursor === '') this.rest.replaceChildren();
      for (const p of participants) {
        if (p.id !== conference.id && !conference.participants.has(p.id)) this.rest.append(this.item(p, false));
      }
      this.next = next;
      render();
    });
    conference.on('participant-updated', ({ participant, previous }) => {
      if (participant.handRaised && !previous.handRaised) this.note.textContent = `${participant.name} raised their hand`;
      render();
    });
    render();
  }

  setOpen(open: boolean): void {
    this.el.hidden = !open;
    this.button.setAttribute('aria-expanded', String(open));
    this.button.classList.toggle('on', open);
    this.onToggle(open);
  }

  private render(): void {
    const c = this.conference;
    const raised = c.localState.handRaised;
    this.handButton.setAttribute('aria-pressed', String(raised));
    this.handButton.classList.toggle('on', raised);
    this.handButton.title = raised ? 'Lower your hand' : 'Raise your hand';
    this.handButton.replaceChildren(icon(handIcon), h('span', { text: raised ? 'Lower hand' : 'Raise hand' }));

    const others = [...c.participants.values()];
    // Raised hands first, in the order the list had them; then the rest.
    const sorted = [...others.filter((p) => p.handRaised), ...others.filter((p) => !p.handRaised)];
    const self: Participant = { id: c.id ?? '', name: `${c.name} (you)`, ...c.localState };
    this.list.replaceChildren(this.item(self, true), ...sorted.map((p) => this.item(p, false)));

    const total = c.participantCount;
    this.heading.textContent = total > 0 ? `Participants (${total})` : 'Participants';
    const unlisted = Math.max(0, total - others.length - 1);
    this.more.hidden = unlisted === 0 || this.next === '';
    this.more.textContent = this.next ? 'Show more' : `Show ${unlisted} more`;

    const hands = others.filter((p) => p.handRaised).length + (raised ? 1 : 0);
    this.count.textContent = String(hands);
    this.count.hidden = hands === 0;
    this.button.setAttribute('aria-label', hands > 0 ? `Participants, ${hands} raised ${hands === 1 ? 'hand' : 'hands'}` : 'Participants');

    // The tiles are the gallery's; the mark is ours.
    for (const tile of this.tiles.querySelectorAll<HTMLElement>('.tile')) {
      const id = tile.dataset['participantId'];
      const up = tile.classList.contains('local') ? raised : id !== undefined && c.participants.get(id)?.handRaised === true;
      tile.classList.toggle('hand-raised', up);
    }
  }

  private item(p: Participant, self: boolean): HTMLLIElement {
    const li = h('li', { class: self ? 'person self' : 'person', attrs: { 'data-participant-id': p.id } }, h('span', { class: 'person-name', text: p.name }));
    if (p.handRaised) {
      const hand = icon(handIcon);
      hand.classList.add('hand');
      hand.removeAttribute('aria-hidden');
      hand.setAttribute('role', 'img');
      hand.setAttribute('aria-label', 'hand raised');
      li.append(hand);
    }
    if (p.audioMuted) li.append(h('span', { class: 'muted', text: 'muted' }));
    if (p.audience) li.append(h('span', { class: 'audience', text: 'audience' }));
    return li;
  }
}
