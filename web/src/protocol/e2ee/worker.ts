// The end-to-end encryption worker (bundled on its own as /e2ee-worker.js):
// it holds the room secret and every key, and transforms encoded frames —
// handed to it by RTCRtpScriptTransform (its `rtctransform` event) or, in
// Chromium without it, as the streams of createEncodedStreams. The page sends
// it only the passphrase, our participant id, receiver bindings and rotations.

import type { FrameKind } from './frame';
import { ReceiverKeys, roomSecret, SenderKeys } from './keys';
import type { ToWorker, TransformOptions } from './messages';
import { DecryptWatch } from './watch';

interface EncodedFrame {
  data: ArrayBuffer;
}

interface Receiver {
  sender: string | null;
  encrypted: boolean;
  keys: ReceiverKeys | null;
  watch: DecryptWatch;
}

const subtle = crypto.subtle;
const scope = self as unknown as {
  postMessage(m: unknown): void;
  onmessage: ((ev: MessageEvent<ToWorker>) => void) | null;
  onrtctransform: ((ev: { transformer: { readable: ReadableStream; writable: WritableStream; options: TransformOptions } }) => void) | null;
};

let resolvedSecret: CryptoKey | null = null;
let sender: SenderKeys | null = null;
let senderId: string | null = null;
const receivers = new Map<string, Receiver>();

function receiver(handle: string): Receiver {
  let r = receivers.get(handle);
  if (!r) {
    r = { sender: null, encrypted: true, keys: null, watch: new DecryptWatch(performance.now()) };
    receivers.set(handle, r);
  }
  return r;
}

function report(handle: string, decrypting: boolean | null): void {
  if (decrypting !== null) scope.postMessage({ op: 'status', handle, decrypting });
}

function sealer(kind: FrameKind): TransformStream<EncodedFrame, EncodedFrame> {
  return new TransformStream({
    async transform(frame, out) {
      // Nothing leaves unencrypted: frames before our id and keys are dropped.
      if (!sender) return;
      frame.data = (await sender.seal(kind, new Uint8Array(frame.data))).buffer;
      out.enqueue(frame);
    },
  });
}

function opener(kind: FrameKind, handle: string): TransformStream<EncodedFrame, EncodedFrame> {
  return new TransformStream({
    async transform(frame, out) {
      const r = receiver(handle);
      const now = performance.now();
      if (r.sender === null) return;
      if (!r.encrypted) {
        out.enqueue(frame); // its sender says it does not encrypt (no lock badge then)
        return;
      }
      if (!r.keys) {
        report(handle, r.watch.failed(now));
        return;
      }
      try {
        frame.data = (await r.keys.open(kind, new Uint8Array(frame.data), now)).buffer;
      } catch {
        report(handle, r.watch.failed(now)); // dropped: never garbage to the decoder
        return;
      }
      report(handle, r.watch.opened(now));
      out.enqueue(frame);
    },
  });
}

function pipe(readable: ReadableStream, writable: WritableStream, o: TransformOptions): void {
  const t = o.role === 'send' ? sealer(o.kind) : opener(o.kind, o.handle);
  readable.pipeThrough(t).pipeTo(writable).catch(() => {});
}

function rebuildReceiverKeys(r: Receiver): void {
  r.keys = resolvedSecret && r.sender ? new ReceiverKeys(subtle, resolvedSecret, r.sender) : null;
}

scope.onrtctransform = (ev) => {
  const t = ev.transformer;
  pipe(t.readable, t.writable, t.options);
};

scope.onmessage = (ev) => {
  const m = ev.data;
  switch (m.op) {
    case 'init':
      void roomSecret(subtle, m.passphrase, m.room).then((s) => {
        resolvedSecret = s;
        if (senderId !== null) sender = new SenderKeys(subtle, s, senderId);
        for (const r of receivers.values()) rebuildReceiverKeys(r);
      });
      break;
    case 'self':
      if (m.id === senderId) break; // a resumed session keeps its key and counter
      senderId = m.id;
      sender = resolvedSecret ? new SenderKeys(subtle, resolvedSecret, m.id) : null;
      break;
    case 'rotate':
      sender?.rotate();
      break;
    case 'bind': {
      const r = receiver(m.handle);
      r.encrypted = m.encrypted;
      if (r.sender !== m.sender) {
        r.sender = m.sender;
        r.watch = new DecryptWatch(performance.now());
        rebuildReceiverKeys(r);
      }
      break;
    }
    case 'stream':
      pipe(m.readable, m.writable, m.options);
      break;
  }
};
