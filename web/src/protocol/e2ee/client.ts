// The page's side of end-to-end encryption (docs/e2ee.md): it starts the
// worker that holds the keys (/e2ee-worker.js, same origin: the CSP's
// script-src 'self' covers workers), attaches an encoded transform to every
// sender and receiver, and reports which remote sources cannot be decrypted.
// RTCRtpScriptTransform where the browser has it (Firefox, Chromium ≥ 141),
// else Chromium's createEncodedStreams, whose streams go to the same worker
// (that needs `encodedInsertableStreams: true` in the connection's config).

import type { FrameKind } from './frame';
import type { FromWorker, ToWorker, TransformOptions } from './messages';

export type E2eeMode = 'script' | 'streams';

/** What Conference needs of end-to-end encryption. */
export interface EndToEnd {
  /** Extra RTCPeerConnection configuration. */
  readonly peerConfig: Record<string, unknown>;
  setSelf(id: string): void;
  sender(sender: unknown, kind: FrameKind): void;
  /** receiver now carries `owner`'s media; `encrypted`: owner says it encrypts. */
  receiver(receiver: unknown, kind: FrameKind, owner: string, encrypted: boolean): void;
  /** A new key for our frames (someone left). */
  rotate(): void;
}

interface EncodedStreams {
  readable: ReadableStream;
  writable: WritableStream;
}

interface Transformable {
  transform?: unknown;
  createEncodedStreams?: () => EncodedStreams;
}

/** The mode this browser supports, or null when it cannot encrypt frames. */
export function e2eeMode(g: Record<string, unknown> = globalThis as unknown as Record<string, unknown>): E2eeMode | null {
  if (typeof g['RTCRtpScriptTransform'] === 'function') return 'script';
  const sender = g['RTCRtpSender'] as { prototype?: object } | undefined;
  if (sender?.prototype && 'createEncodedStreams' in sender.prototype) return 'streams';
  return null;
}

/** The #e2ee=<passphrase> of a location fragment, or null. */
export function passphraseFromHash(hash: string): string | null {
  const p = new URLSearchParams(hash.replace(/^#/, '')).get('e2ee');
  return p ? p : null;
}

export class E2ee implements EndToEnd {
  readonly peerConfig: Record<string, unknown>;
  private readonly worker: Worker;
  private readonly handles = new WeakMap<object, string>();
  private readonly owners = new Map<string, { owner: string; kind: FrameKind }>();
  private nextHandle = 0;
  /** Called when a remote source's frames decrypt again (true) or have not for a while (false). */
  onStatus: (owner: string, kind: FrameKind, decrypting: boolean) => void = () => {};

  constructor(
    passphrase: string,
    room: string,
    readonly mode: E2eeMode,
    workerUrl = '/e2ee-worker.js',
  ) {
    this.peerConfig = mode === 'streams' ? { encodedInsertableStreams: true } : {};
    this.worker = new Worker(workerUrl, { name: 'podium-e2ee' });
    this.worker.onmessage = (ev: MessageEvent<FromWorker>) => {
      const o = this.owners.get(ev.data.handle);
      if (o) this.onStatus(o.owner, o.kind, ev.data.decrypting);
    };
    this.post({ op: 'init', passphrase, room });
  }

  setSelf(id: string): void {
    this.post({ op: 'self', id });
  }

  rotate(): void {
    this.post({ op: 'rotate' });
  }

  sender(sender: unknown, kind: FrameKind): void {
    this.attach(sender as Transformable, { role: 'send', kind });
  }

  receiver(receiver: unknown, kind: FrameKind, owner: string, encrypted: boolean): void {
    const r = receiver as Transformable & object;
    let handle = this.handles.get(r);
    if (handle === undefined) {
      handle = `r${this.nextHandle++}`;
      this.handles.set(r, handle);
      // Bound before the transform exists, so its first frame knows its sender.
      this.post({ op: 'bind', handle, sender: owner, encrypted });
      this.attach(r, { role: 'recv', kind, handle });
    } else {
      this.post({ op: 'bind', handle, sender: owner, encrypted });
    }
    this.owners.set(handle, { owner, kind });
  }

  private attach(t: Transformable, options: TransformOptions): void {
    if (this.mode === 'script') {
      const Script = (globalThis as unknown as { RTCRtpScriptTransform: new (w: Worker, o: unknown) => unknown })
        .RTCRtpScriptTransform;
      t.transform = new Script(this.worker, options);
      return;
    }
    const { readable, writable } = t.createEncodedStreams!();
    this.worker.postMessage({ op: 'stream', readable, writable, options } satisfies ToWorker, [
      readable as unknown as Transferable,
      writable as unknown as Transferable,
    ]);
  }

  private post(m: ToWorker): void {
    this.worker.postMessage(m);
  }
}
