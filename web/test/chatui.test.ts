// @vitest-environment happy-dom
// The chat panel and the participants list on a Conference driven by the fake
// WebSocket: messages render as text only, the log is a live region, Enter
// sends, unread counts; raised hands mark tiles and the list.

import { describe, expect, it } from 'vitest';
import { Conference } from '../src/protocol';
import { ChatPanel } from '../src/ui/chat';
import { Gallery } from '../src/ui/gallery';
import { PeoplePanel } from '../src/ui/people';
import { asStream, FakeClock, FakePeerConnection, FakeStream, FakeTrack, FakeWebSocket, flush } from './fakes';

async function setup() {
  FakePeerConnection.created = [];
  const sockets: FakeWebSocket[] = [];
  const conference = new Conference({
    room: 'standup',
    name: 'Alice',
    url: 'ws://test/ws',
    localStream: asStream(new FakeStream('local', [new FakeTrack('audio', 'mic-1'), new FakeTrack('video', 'cam-1')])),
    clock: new FakeClock(),
    createWebSocket: (url) => {
      const ws = new FakeWebSocket(url);
      sockets.push(ws);
      return ws;
    },
    createPeerConnection: (cfg) => new FakePeerConnection(cfg),
    codecs: () => null,
    logger: { debug: () => {}, warn: () => {} },
  });
  const gallery = new Gallery({ conference, name: 'Alice', localStream: null });
  const chat = new ChatPanel(conference, () => {});
  const people = new PeoplePanel(conference, gallery.el, () => {});
  document.body.replaceChildren(gallery.el, people.el, chat.el, chat.button, people.handButton, people.button);
  const ws = () => sockets.at(-1) as FakeWebSocket;
  conference.join();
  ws().open();
  ws().receive({
    type: 'welcome',
    version: 1,
    id: 'pA',
    room: 'standup',
    resume: { id: 'pA', secret: 's' },
    participants: [{ id: 'pB', name: 'Bob', audioMuted: false, videoMuted: false }],
    iceServers: [],
  });
  await flush();
  return { conference, chat, people, ws };
}

const hostile = `<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2"> & <b>bold</b>`;

describe('chat panel', () => {
  it('renders messages as text: no element is made from them', async () => {
    const t = await setup();
    t.ws().receive({ type: 'chat-history', messages: [{ seq: 1, from: 'pB', name: '<i>Bob</i>', text: hostile, time: 1_700_000_000_000 }] });
    t.ws().receive({ type: 'chat', seq: 2, from: 'pB', name: 'Bob', text: 'line 1\nline 2', time: 1_700_000_001_000 });
    const items = document.querySelectorAll('ol.chat-log > li.chat-message');
    expect(items.length).toBe(2);
    const first = items[0] as HTMLElement;
    expect(first.querySelector('.chat-text')?.textContent).toBe(hostile);
    expect(first.querySelector('.chat-name')?.textContent).toBe('<i>Bob</i>');
    expect(first.querySelectorAll('script, img, b, i').length).toBe(0);
    expect(document.querySelectorAll('script, img').length).toBe(0);
    expect((window as unknown as { pwned?: number }).pwned).toBeUndefined();
    expect(first.dataset['from']).toBe('pB');
    expect(items[1]?.querySelector('.chat-text')?.textContent).toBe('line 1\nline 2');
    const log = document.querySelector('ol.chat-log');
    expect(log?.getAttribute('role')).toBe('log');
    expect(log?.getAttribute('aria-live')).toBe('polite');
  });

  it('sends on Enter, keeps Shift+Enter for a new line, counts unread while closed', async () => {
    const t = await setup();
    const input = document.querySelector<HTMLTextAreaElement>('textarea[name=chat-text]');
    if (!input) throw new Error('no chat input');
    input.value = 'hello';
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', shiftKey: true, bubbles: true }));
    expect(t.ws().sentOfType('chat')).toEqual([]);
    input.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', bubbles: true }));
    expect(t.ws().sentOfType('chat')).toEqual([{ type: 'chat', text: 'hello' }]);
    expect(input.value).toBe('');

    const badge = document.querySelector<HTMLElement>('button.chat-toggle .unread');
    t.ws().receive({ type: 'chat', seq: 1, from: 'pA', name: 'Alice', text: 'hello', time: 1 });
    expect(badge?.hidden).toBe(true); // our own message is not unread
    t.ws().receive({ type: 'chat', seq: 2, from: 'pB', name: 'Bob', text: 'hi', time: 2 });
    expect(badge?.textContent).toBe('1');
    expect(badge?.hidden).toBe(false);
    document.querySelector<HTMLButtonElement>('button.chat-toggle')?.click();
    expect(t.chat.open).toBe(true);
    expect(badge?.hidden).toBe(true);
    expect(document.querySelector('button.chat-toggle')?.getAttribute('aria-expanded')).toBe('true');
    expect(document.querySelector('li.chat-message.own .chat-name')?.textContent).toBe('Alice (you)');
  });

  it('shows the server refusing a message and gives the text back', async () => {
    const t = await setup();
    const input = document.querySelector<HTMLTextAreaElement>('textarea[name=chat-text]');
    if (!input) throw new Error('no chat input');
    input.value = 'flood';
    document.querySelector<HTMLFormElement>('form.chat-form')?.requestSubmit();
    expect(input.value).toBe('');
    t.ws().receive({ type: 'error', code: 'chat-rate-limited', message: 'slow down', fatal: false });
    const error = document.querySelector<HTMLElement>('.chat-error');
    expect(error?.hidden).toBe(false);
    expect(error?.textContent).toMatch(/too fast/);
    expect(input.value).toBe('flood');
  });
});

describe('raised hands', () => {
  it('marks the tile and the list, ours and others’, and lowers them', async () => {
    const t = await setup();
    const bobTile = () => document.querySelector('.tile[data-participant-id="pB"]');
    t.ws().receive({ type: 'participants', participants: [{ id: 'pB', name: 'Bob', audioMuted: false, videoMuted: false, handRaised: true }], left: [], count: 2 });
    expect(bobTile()?.classList.contains('hand-raised')).toBe(true);
    expect(document.querySelector('li[data-participant-id="pB"] .hand')).not.toBeNull();
    expect(document.querySelector('.hand-note')?.textContent).toBe('Bob raised their hand');
    expect(document.querySelector('button.people-toggle .unread')?.textContent).toBe('1');

    document.querySelector<HTMLButtonElement>('button.hand')?.click();
    expect(t.ws().sentOfType('raise-hand')).toEqual([{ type: 'raise-hand', raised: true }]);
    expect(document.querySelector('button.hand')?.getAttribute('aria-pressed')).toBe('true');
    expect(document.querySelector('.tile.local')?.classList.contains('hand-raised')).toBe(true);
    expect(document.querySelector('li.self .hand')).not.toBeNull();

    t.ws().receive({ type: 'participants', participants: [{ id: 'pB', name: 'Bob', audioMuted: false, videoMuted: false }], left: [], count: 2 });
    document.querySelector<HTMLButtonElement>('button.hand')?.click();
    expect(bobTile()?.classList.contains('hand-raised')).toBe(false);
    expect(document.querySelector('.tile.local')?.classList.contains('hand-raised')).toBe(false);
    expect(document.querySelectorAll('ul.people .hand').length).toBe(0);
    expect(t.ws().sentOfType('raise-hand').at(-1)).toEqual({ type: 'raise-hand', raised: false });
  });
});

describe('participants list of a big room', () => {
  it('counts everyone, lists the listed and pages through the rest', async () => {
    const t = await setup();
    const more = () => document.querySelector<HTMLButtonElement>('button.people-more');
    expect(document.querySelector('.people-panel h2')?.textContent).toBe('Participants (2)');
    expect(more()?.hidden).toBe(true); // everyone is listed

    t.ws().receive({ type: 'participants', participants: [], left: [], count: 203 });
    expect(document.querySelector('.people-panel h2')?.textContent).toBe('Participants (203)');
    expect(more()?.hidden).toBe(false);
    expect(more()?.textContent).toBe('Show 201 more');
    more()?.click();
    expect(t.ws().sentOfType('list-participants')).toEqual([{ type: 'list-participants', cursor: '' }]);
    const viewer = (i: number) => ({ id: `pV${i}`, name: `Viewer ${i}`, audioMuted: false, videoMuted: false });
    const first = [{ id: 'pA', name: 'Alice', audioMuted: false, videoMuted: false }, { id: 'pB', name: 'Bob', audioMuted: false, videoMuted: false }, viewer(1), viewer(2)];
    t.ws().receive({ type: 'participant-page', cursor: '', participants: first, next: '4', count: 203 });
    // Ours and Bob's are in the list already: the page adds the others.
    expect([...document.querySelectorAll('ul.people-rest li')].map((li) => li.getAttribute('data-participant-id'))).toEqual(['pV1', 'pV2']);
    expect(more()?.textContent).toBe('Show more');
    more()?.click();
    expect(t.ws().sentOfType('list-participants').at(-1)).toEqual({ type: 'list-participants', cursor: '4' });
    t.ws().receive({ type: 'participant-page', cursor: '4', participants: [viewer(3)], next: '', count: 203 });
    expect(document.querySelectorAll('ul.people-rest li').length).toBe(3);
    expect(more()?.hidden).toBe(true); // the last page came
  });
});
