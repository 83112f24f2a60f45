// The start page: the join form (room, name) beside the pre-join panel
// (prejoin.ts: preview, devices, join muted). Joining hands the chosen media to
// onJoin; without onJoin it navigates to /<room>?name=<name>.

import { h } from './dom';
import { parseVideoSize } from './media';
import { Prejoin, type JoinChoice } from './prejoin';
import { isValidName, isValidRoom, roomUrl } from './route';

export interface FormOptions {
  room: string;
  name: string;
  /** `video=WxH` parameter to carry over, if any. */
  video: string | null;
  error: string | null;
  /** Access token the link carried, handed on to the room page. */
  token?: string;
  /** Joins in this page with what the pre-join panel opened. */
  onJoin?: (room: string, name: string, choice: JoinChoice) => void;
}

const NAME_KEY = 'podium.name';

export function showJoinForm(root: HTMLElement, opts: FormOptions): void {
  document.title = 'Podium';
  const room = h('input', {
    attrs: {
      name: 'room',
      type: 'text',
      required: '',
      maxlength: '64',
      pattern: '[A-Za-z0-9_.\\-]{1,64}',
      placeholder: 'standup',
      autocomplete: 'off',
      spellcheck: 'false',
    },
  });
  room.value = opts.room;
  const name = h('input', {
    attrs: { name: 'name', type: 'text', required: '', maxlength: '64', placeholder: 'Your name', autocomplete: 'name' },
  });
  name.value = opts.name || loadName();
  const error = h('p', { class: 'error', attrs: { role: 'alert' }, text: opts.error ?? '' });
  error.hidden = !opts.error;
  const submit = h('button', { class: 'primary', text: 'Join', attrs: { type: 'submit' } });
  const prejoin = opts.onJoin ? new Prejoin(parseVideoSize(opts.video)) : null;

  const form = h(
    'form',
    { class: 'card join-form', attrs: { novalidate: '' } },
    h('h1', { class: 'logo', text: 'Podium' }),
    h('p', { class: 'tagline', text: 'Video meetings on your own server.' }),
    h('label', {}, h('span', { text: 'Room' }), room),
    h('label', {}, h('span', { text: 'Display name' }), name),
    error,
    submit,
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const r = room.value.trim();
    const n = name.value.trim();
    let problem: string | null = null;
    if (!isValidRoom(r)) problem = 'Room names are 1–64 letters, digits, “.”, “_” or “-”.';
    else if (!isValidName(n)) problem = 'Please enter a name (up to 64 characters).';
    if (problem) {
      error.textContent = problem;
      error.hidden = false;
      (isValidRoom(r) ? name : room).focus();
      return;
    }
    saveName(n);
    const onJoin = opts.onJoin;
    if (prejoin && onJoin) {
      submit.disabled = true;
      submit.textContent = 'Joining…';
      void prejoin.take().then((choice) => onJoin(r, n, choice));
      return;
    }
    // The room page takes the token from its address and removes it from there.
    location.assign(roomUrl(r, n, opts.video) + (opts.token ? `&token=${encodeURIComponent(opts.token)}` : ''));
  });

  root.replaceChildren(h('div', { class: 'landing' }, h('div', { class: 'prejoin-layout' }, form, prejoin?.el)));
  (opts.room && isValidRoom(opts.room) ? name : room).focus();
}

function loadName(): string {
  try {
    return localStorage.getItem(NAME_KEY) ?? '';
  } catch {
    return '';
  }
}

function saveName(n: string): void {
  try {
    localStorage.setItem(NAME_KEY, n);
  } catch {
    // storage unavailable (private mode); not important
  }
}
