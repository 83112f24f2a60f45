// Chat: what the client keeps of the room's chat, and the checks it makes
// before posting (the server makes them too: docs/protocol.md, "Chat and raised hands").

import { MaxChatChars } from './generated/messages';
import type { ChatEntry } from './messages';

export { MaxChatChars };

/** Messages kept on the client: the server's history (100) plus a long call's worth more. */
export const CHAT_KEEP = 500;

/** Why text cannot be posted ("" when it can): the server's rules, so the user learns before sending. */
export function chatTextProblem(text: string): string {
  if (text.trim() === '') return 'empty';
  const n = Array.from(text).length;
  if (n > MaxChatChars) return `too long: ${n} characters, at most ${MaxChatChars}`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/.test(text)) return 'control characters';
  return '';
}

/** The room's chat as this client knows it, oldest first, ordered and without duplicates by `seq`. */
export class ChatLog {
  private list: ChatEntry[] = [];

  /** `chat-history` after a (re)join: the server's list replaces ours, keeping what is older than it. */
  replace(history: readonly ChatEntry[]): void {
    const first = history[0]?.seq;
    const older = first === undefined ? [] : this.list.filter((m) => m.seq < first);
    this.list = [...older, ...history.map((m) => ({ ...m }))].slice(-CHAT_KEEP);
  }

  /** A `chat`; false when it was already known. */
  add(entry: ChatEntry): boolean {
    if (this.list.some((m) => m.seq === entry.seq)) return false;
    this.list.push({ ...entry });
    this.list.sort((a, b) => a.seq - b.seq);
    if (this.list.length > CHAT_KEEP) this.list.splice(0, this.list.length - CHAT_KEEP);
    return true;
  }

  get messages(): ChatEntry[] {
    return this.list.map((m) => ({ ...m }));
  }
}
