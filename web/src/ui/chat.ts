// The chat panel: the room's messages as plain text (textContent only, never
// markup), a keyboard-operable form, and an unread count on its toggle button.

import { MaxChatChars, type ChatEntry, type Conference } from '../protocol';
import { h, icon } from './dom';

const svg = (body: string) =>
  `<svg viewBox="0 0 24 24" width="20" height="20" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round">${body}</svg>`;
export const chatIcon = svg('<path d="M21 12a8 8 0 0 1-11.6 7.1L4 20l1-4.6A8 8 0 1 1 21 12z"/>');

const timeFormat = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });

/** What a server error about chat tells the user. */
const CHAT_ERRORS: Record<string, string> = {
  'chat-too-long': `Message not sent: at most ${MaxChatChars} characters.`,
  'chat-rate-limited': 'Message not sent: you are sending too fast. Wait a moment.',
};

/** One message as a list item; every piece of it is text. */
export function chatItem(m: ChatEntry, self: string | null): HTMLLIElement {
  const at = new Date(m.time);
  const li = h(
    'li',
    { class: m.from === self ? 'chat-message own' : 'chat-message', attrs: { 'data-seq': String(m.seq), 'data-from': m.from } },
    h('span', { class: 'chat-name', text: m.from === self ? `${m.name} (you)` : m.name }),
    h('time', { class: 'chat-time', text: timeFormat.format(at), attrs: { datetime: at.toISOString() } }),
    h('p', { class: 'chat-text', text: m.text }),
  );
  return li;
}

/**
 * `section.chat-panel`: `ol.chat-log` (role log, aria-live polite) of
 * `li.chat-message`, and `form.chat-form` with `textarea[name=chat-text]`
 * (Enter sends, Shift+Enter starts a new line) and `button.chat-send`.
 * `button` (`button.chat-toggle`) opens and closes it and counts unread
 * messages (`.unread`).
 */
export class ChatPanel {
  readonly el: HTMLElement;
  readonly button: HTMLButtonElement;
  private readonly log: HTMLOListElement;
  private readonly input: HTMLTextAreaElement;
  private readonly error: HTMLParagraphElement;
  private readonly badge: HTMLSpanElement;
  private unread = 0;
  /** The last text sent, restored when the server drops it. */
  private lastSent = '';

  constructor(
    private readonly conference: Conference,
    private readonly onToggle: (open: boolean) => void,
  ) {
    this.log = h('ol', { class: 'chat-log', attrs: { role: 'log', 'aria-live': 'polite', 'aria-label': 'Chat messages', tabindex: '0' } });
    this.input = h('textarea', {
      attrs: { name: 'chat-text', rows: '2', placeholder: 'Message everyone', 'aria-label': 'Chat message', autocomplete: 'off' },
    });
    const send = h('button', { class: 'primary chat-send', text: 'Send', attrs: { type: 'submit' } });
    this.error = h('p', { class: 'chat-error', attrs: { role: 'alert' } });
    this.error.hidden = true;
    const form = h('form', { class: 'chat-form' }, this.input, send);
    this.el = h('section', { class: 'side-section chat-panel', attrs: { id: 'chat-panel', 'aria-label': 'Chat' } }, h('h2', { text: 'Chat' }), this.log, this.error, form);
    this.el.hidden = true;

    this.badge = h('span', { class: 'unread', attrs: { 'aria-hidden': 'true' } });
    this.badge.hidden = true;
    this.button = h(
      'button',
      { class: 'ctl compact chat-toggle', attrs: { type: 'button', 'aria-controls': 'chat-panel', 'aria-expanded': 'false', title: 'Chat' } },
      icon(chatIcon),
      h('span', { text: 'Chat' }),
      this.badge,
    );
    this.button.addEventListener('click', () => this.setOpen(this.el.hidden));

    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      this.send();
    });
    this.input.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && !ev.shiftKey && !ev.isComposing) {
        ev.preventDefault();
        this.send();
      } else if (ev.key === 'Escape') {
        this.setOpen(false);
        this.button.focus();
      }
    });
    this.input.addEventListener('input', () => this.showError(''));

    conference.on('chat-history', ({ messages }) => this.renderAll(messages));
    conference.on('chat', ({ message }) => this.append(message));
    conference.on('error', ({ code }) => {
      const text = CHAT_ERRORS[code];
      if (!text) return;
      this.showError(text);
      if (this.input.value === '') this.input.value = this.lastSent;
    });
  }

  get open(): boolean {
    return !this.el.hidden;
  }

  setOpen(open: boolean): void {
    this.el.hidden = !open;
    this.button.setAttribute('aria-expanded', String(open));
    this.button.classList.toggle('on', open);
    if (open) {
      this.unread = 0;
      this.renderBadge();
      this.scrollToEnd();
      this.input.focus();
    }
    this.onToggle(open);
  }

  private send(): void {
    const text = this.input.value;
    if (text.trim() === '') return;
    const problem = this.conference.sendChat(text);
    if (problem) {
      this.showError(`Message not sent: ${problem}.`);
      return;
    }
    this.lastSent = text;
    this.input.value = '';
    this.showError('');
  }

  private showError(text: string): void {
    this.error.textContent = text;
    this.error.hidden = text === '';
  }

  private renderAll(messages: ChatEntry[]): void {
    this.log.setAttribute('aria-busy', 'true');
    this.log.replaceChildren(...messages.map((m) => chatItem(m, this.conference.id)));
    this.log.setAttribute('aria-busy', 'false');
    this.scrollToEnd();
  }

  private append(m: ChatEntry): void {
    const atEnd = this.log.scrollTop + this.log.clientHeight >= this.log.scrollHeight - 24;
    this.log.append(chatItem(m, this.conference.id));
    if (atEnd || m.from === this.conference.id) this.scrollToEnd();
    if (!this.open && m.from !== this.conference.id) {
      this.unread++;
      this.renderBadge();
    }
  }

  private renderBadge(): void {
    this.badge.textContent = String(this.unread);
    this.badge.hidden = this.unread === 0;
    this.button.setAttribute('aria-label', this.unread > 0 ? `Chat, ${this.unread} unread` : 'Chat');
  }

  private scrollToEnd(): void {
    this.log.scrollTop = this.log.scrollHeight;
  }
}
