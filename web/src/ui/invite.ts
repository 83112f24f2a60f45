// The "Invite" button and its panel: the room's link — without a name, token
// or passphrase — and, in an end-to-end encrypted call, the passphrase in a
// field of its own with a note to send it another way (a link and its key in
// one message would give both to whoever reads that message), and "Rotate
// encryption key", which moves our frames to a new key now.

import { h } from './dom';

/** The link that invites someone to room: no name, no token, no fragment. */
export function inviteLink(origin: string, room: string): string {
  return `${origin}/${encodeURIComponent(room)}`;
}

export interface InviteOptions {
  room: string;
  /** The page's origin (location.origin). */
  origin: string;
  /** The call's end-to-end encryption passphrase; null without E2EE. */
  passphrase: string | null;
  /** Rotates our sender key now (E2EE only). */
  rotate?: () => void;
  /** The clipboard; undefined where the browser offers none. */
  clipboard?: { writeText(text: string): Promise<void> };
}

/**
 * `button.invite` (aria-expanded) and `section.invite-panel` (role dialog):
 * `input[name=invite-link]` + `button.copy-link`; with E2EE
 * `input[name=invite-passphrase]` + `button.copy-passphrase`, `.invite-note`,
 * `button.rotate-key`; `.invite-status` says what happened. Escape closes it.
 */
export function invitePanel(opts: InviteOptions): { button: HTMLButtonElement; panel: HTMLElement } {
  const button = h('button', {
    class: 'ctl invite',
    text: 'Invite',
    attrs: { type: 'button', 'aria-expanded': 'false', 'aria-controls': 'invite-panel', title: 'Invite someone' },
  });
  const status = h('p', { class: 'invite-status', attrs: { role: 'status' } });
  const say = (text: string) => {
    status.textContent = text;
  };

  const field = (name: string, label: string, value: string, type: string) => {
    const input = h('input', { attrs: { name, type, readonly: '', autocomplete: 'off', spellcheck: 'false' } });
    input.value = value;
    return { input, label: h('label', {}, h('span', { text: label }), input) };
  };
  const copyButton = (cls: string, text: string, input: HTMLInputElement, what: string) => {
    const btn = h('button', { class: cls, text, attrs: { type: 'button' } });
    btn.addEventListener('click', () => {
      if (!opts.clipboard) {
        input.type = 'text'; // a password field's text cannot be copied by hand
        input.select();
        say(`Press Ctrl+C (⌘C) to copy the ${what}.`);
        return;
      }
      opts.clipboard.writeText(input.value).then(
        () => say(`The ${what} is copied.`),
        () => {
          input.type = 'text';
          input.select();
          say(`Cannot copy: press Ctrl+C (⌘C) to copy the ${what}.`);
        },
      );
    });
    return btn;
  };

  const link = field('invite-link', 'Room link', inviteLink(opts.origin, opts.room), 'text');
  const title = h('h2', { text: 'Invite', attrs: { id: 'invite-title' } });
  const panel = h(
    'section',
    { class: 'invite-panel', attrs: { id: 'invite-panel', role: 'dialog', 'aria-labelledby': 'invite-title' } },
    title,
    link.label,
    copyButton('copy-link', 'Copy link', link.input, 'link'),
  );
  if (opts.passphrase !== null) {
    const pass = field('invite-passphrase', 'End-to-end encryption passphrase', opts.passphrase, 'password');
    const rotate = h('button', { class: 'rotate-key', text: 'Rotate encryption key', attrs: { type: 'button' } });
    rotate.addEventListener('click', () => {
      opts.rotate?.();
      say('Your media is now encrypted with a new key.');
    });
    panel.append(
      pass.label,
      copyButton('copy-passphrase', 'Copy passphrase', pass.input, 'passphrase'),
      h('p', { class: 'invite-note', text: 'Send the passphrase through another channel than the link (e.g. tell it by phone).' }),
      rotate,
    );
  }
  panel.append(status);
  panel.hidden = true;

  const show = (open: boolean) => {
    panel.hidden = !open;
    button.setAttribute('aria-expanded', String(open));
    say('');
    if (open) link.input.focus();
  };
  button.addEventListener('click', () => show(panel.hidden));
  panel.addEventListener('keydown', (ev) => {
    if (ev.key !== 'Escape') return;
    show(false);
    button.focus();
  });
  return { button, panel };
}
