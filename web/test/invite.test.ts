// @vitest-environment happy-dom
// The pre-join passphrase (it becomes the E2EE passphrase), the invite panel
// (the link without passphrase or token, the passphrase apart) and "Rotate
// encryption key" (our frames move to a newer key id).
import { webcrypto } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeHeader } from '../src/protocol/e2ee/frame';
import { roomSecret, SenderKeys } from '../src/protocol/e2ee/keys';
import { inviteLink, invitePanel } from '../src/ui/invite';
import { joinPassphrase, Prejoin } from '../src/ui/prejoin';
import { startE2ee } from '../src/ui/room';

const subtle = webcrypto.subtle as unknown as SubtleCrypto;

// What the page posts to the E2EE worker (E2ee's constructor makes one).
class FakeWorker {
  static last: FakeWorker | null = null;
  readonly posted: unknown[] = [];
  onmessage: unknown = null;
  constructor(readonly url: string) {
    FakeWorker.last = this;
  }
  postMessage(m: unknown): void {
    this.posted.push(m);
  }
}

const g = globalThis as unknown as Record<string, unknown>;
afterEach(() => {
  delete g['Worker'];
  delete g['RTCRtpScriptTransform'];
  document.body.replaceChildren();
});

describe('pre-join passphrase', () => {
  it('is a labelled password field without autocomplete whose value becomes the E2EE passphrase', async () => {
    const p = new Prejoin({ width: 320, height: 180 });
    const input = p.el.querySelector<HTMLInputElement>('input[name=e2ee-passphrase]')!;
    expect(input.type).toBe('password');
    expect(input.getAttribute('autocomplete')).toBe('off');
    expect(input.closest('label')!.textContent).toContain('End-to-end encryption passphrase');
    input.value = 'typed secret';
    const choice = await p.take();
    expect(choice.passphrase).toBe('typed secret');
    // The typed one wins over the address's; the address's is used when none is typed.
    expect(joinPassphrase(choice, '#e2ee=from-link')).toBe('typed secret');
    expect(joinPassphrase({ ...choice, passphrase: undefined }, '#e2ee=from-link')).toBe('from-link');
    expect(joinPassphrase({ ...choice, passphrase: undefined }, '')).toBeNull();

    // It reaches the conference's E2EE option: the E2ee the room page starts, whose worker derives keys from it.
    g['Worker'] = FakeWorker;
    g['RTCRtpScriptTransform'] = function () {};
    const e2ee = startE2ee('room1', joinPassphrase(choice, ''));
    expect(e2ee).not.toBeNull();
    expect(FakeWorker.last!.posted).toContainEqual({ op: 'init', passphrase: 'typed secret', room: 'room1' });
    expect(startE2ee('room1', null)).toBeNull();
  });

  it('left empty, gives no passphrase', async () => {
    const choice = await new Prejoin({ width: 320, height: 180 }).take();
    expect(choice.passphrase).toBeUndefined();
  });
});

describe('invite panel', () => {
  const open = (passphrase: string | null, extra: Partial<Parameters<typeof invitePanel>[0]> = {}) => {
    const copied: string[] = [];
    const rotations: number[] = [];
    const { button, panel } = invitePanel({
      room: 'team.sync',
      origin: 'https://meet.example',
      passphrase,
      rotate: () => rotations.push(1),
      clipboard: { writeText: async (t) => void copied.push(t) },
      ...extra,
    });
    document.body.append(button, panel);
    return { button, panel, copied, rotations };
  };

  it('offers the link without passphrase or token, and the passphrase only in its own field', async () => {
    expect(inviteLink('https://meet.example', 'a b')).toBe('https://meet.example/a%20b');
    const { button, panel, copied } = open('s3cret-pass');
    expect(panel.hidden).toBe(true);
    button.click();
    expect(panel.hidden).toBe(false);
    expect(button.getAttribute('aria-expanded')).toBe('true');
    expect(panel.getAttribute('role')).toBe('dialog');
    const link = panel.querySelector<HTMLInputElement>('input[name=invite-link]')!;
    const pass = panel.querySelector<HTMLInputElement>('input[name=invite-passphrase]')!;
    expect(document.activeElement).toBe(link);
    expect(link.value).toBe('https://meet.example/team.sync');
    expect(link.value).not.toContain('s3cret');
    expect(link.value).not.toMatch(/token|#|e2ee|name=/);
    expect(pass.value).toBe('s3cret-pass');
    expect(pass.type).toBe('password');
    expect(pass.closest('label')!.textContent).toContain('passphrase');
    // Nothing else in the panel carries the passphrase.
    const elsewhere = [...panel.querySelectorAll('input')].filter((i) => i !== pass).map((i) => i.value);
    expect(elsewhere.join(' ')).not.toContain('s3cret');
    expect(panel.textContent).not.toContain('s3cret');
    expect(panel.querySelector('.invite-note')!.textContent).toMatch(/another channel/);

    panel.querySelector<HTMLButtonElement>('button.copy-link')!.click();
    panel.querySelector<HTMLButtonElement>('button.copy-passphrase')!.click();
    await Promise.resolve();
    await Promise.resolve();
    expect(copied).toEqual(['https://meet.example/team.sync', 's3cret-pass']);
    expect(panel.querySelector('.invite-status')!.textContent).toMatch(/passphrase is copied/);

    panel.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape', bubbles: true }));
    expect(panel.hidden).toBe(true);
    expect(button.getAttribute('aria-expanded')).toBe('false');
    expect(document.activeElement).toBe(button);
  });

  it('without E2EE shows only the link; without a clipboard selects the text to copy by hand', () => {
    const { button, panel } = open(null, { clipboard: undefined });
    button.click();
    expect(panel.querySelector('input[name=invite-passphrase]')).toBeNull();
    expect(panel.querySelector('button.rotate-key')).toBeNull();
    panel.querySelector<HTMLButtonElement>('button.copy-link')!.click();
    expect(panel.querySelector('.invite-status')!.textContent).toMatch(/Ctrl\+C/);
  });

  it('"Rotate encryption key" moves our frames to a newer key id', async () => {
    const keys = new SenderKeys(subtle, await roomSecret(subtle, 'pass', 'room1', 1000), 'me');
    const kid = async () => decodeHeader(await keys.seal('audio', new Uint8Array(40)))!.kid;
    const { button, panel } = invitePanel({
      room: 'room1',
      origin: 'https://meet.example',
      passphrase: 'pass',
      rotate: () => keys.rotate(), // what the worker does on the page's 'rotate'
    });
    document.body.append(button, panel);
    expect(await kid()).toBe(0);
    button.click();
    const rotate = panel.querySelector<HTMLButtonElement>('button.rotate-key')!;
    expect(rotate.textContent).toBe('Rotate encryption key');
    rotate.click();
    expect(await kid()).toBe(1);
    rotate.click();
    expect(await kid()).toBe(2);
    expect(panel.querySelector('.invite-status')!.textContent).toMatch(/new key/);
  });

  it('the room page wires it to the E2ee, which asks its worker to rotate', () => {
    g['Worker'] = FakeWorker;
    g['RTCRtpScriptTransform'] = function () {};
    const e2ee = startE2ee('room1', 'pass')!;
    e2ee.rotate();
    expect(FakeWorker.last!.posted.at(-1)).toEqual({ op: 'rotate' });
  });
});
