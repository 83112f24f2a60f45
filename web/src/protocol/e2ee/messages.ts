// Messages between the page and the end-to-end encryption worker.

import type { FrameKind } from './frame';

/** What a transform does: seal our frames, or open a receiver's (handle names the receiver). */
export type TransformOptions = { role: 'send'; kind: FrameKind } | { role: 'recv'; kind: FrameKind; handle: string };

export type ToWorker =
  | { op: 'init'; passphrase: string; room: string }
  | { op: 'self'; id: string }
  | { op: 'rotate' }
  /** The receiver `handle` now carries `sender`'s media, which it says it encrypts or not. */
  | { op: 'bind'; handle: string; sender: string; encrypted: boolean }
  /** Chromium's createEncodedStreams: the streams to transform. */
  | { op: 'stream'; readable: ReadableStream; writable: WritableStream; options: TransformOptions };

/** A receiver's frames decrypt again (true) or have not for a while (false). */
export type FromWorker = { op: 'status'; handle: string; decrypting: boolean };
