// Mapping of RTCStatsReport entries to per-participant numbers.

import type { StatsReportLike } from './env';

export type MediaKind = 'audio' | 'video';

/** One inbound-rtp entry of the subscribe connection. */
export interface InboundStats {
  participantId: string;
  kind: MediaKind;
  trackId: string;
  packetsReceived: number;
  bytesReceived: number;
  framesDecoded: number;
  frameWidth: number;
  frameHeight: number;
  framesPerSecond: number;
  freezeCount: number;
  pliCount: number;
  nackCount: number;
  jitter: number;
  packetsLost: number;
  /** Total time frozen, in seconds (when the browser reports it). */
  totalFreezesDuration?: number;
  /** Keyframes decoded (when the browser reports it). */
  keyFramesDecoded?: number;
  /** Audio: the latest level, 0…1 (when the browser reports it). */
  audioLevel?: number;
}

/**
 * One outbound-rtp entry of the publish connection: with simulcast, one per
 * encoding (RID).
 */
export interface OutboundStats {
  kind: MediaKind;
  /** The simulcast encoding's RID; null for audio and a single encoding. */
  rid: string | null;
  packetsSent: number;
  bytesSent: number;
  framesEncoded: number;
  frameWidth: number;
  frameHeight: number;
  framesPerSecond: number;
  pliCount: number;
  nackCount: number;
  firCount: number;
  retransmittedPacketsSent: number;
  targetBitrate: number;
  qualityLimitationReason: string;
  /** E.g. `L1T3`; '' when not reported. */
  scalabilityMode: string;
  /**
   * Whether the encoding is sending: the entry's own `active` when the browser
   * reports it, else the sender's encoding parameters (of this RID); null when
   * unknown. False while the video is paused (pause-video) and for encodings
   * left out of the last `layers`.
   */
  active: boolean | null;
}

export interface ConferenceStats {
  /** Clock time when the stats were taken (ms). */
  timestamp: number;
  inbound: InboundStats[];
  outbound: OutboundStats[];
  /**
   * The browser's estimate of the publish connection's uplink, bits/s
   * (`availableOutgoingBitrate` of its selected candidate pair); 0 when unknown.
   * Simulcast encodings the SFU asks for are sent only as far as it allows.
   */
  uplinkEstimate: number;
}

export interface TrackRef {
  participantId: string;
  kind: MediaKind;
}

type Entry = Record<string, unknown>;

function num(e: Entry, k: string): number {
  const v = e[k];
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

function kindOf(e: Entry): MediaKind | undefined {
  const k = e['kind'] ?? e['mediaType'];
  return k === 'audio' || k === 'video' ? k : undefined;
}

/** `audio-<pid>` / `video-<pid>`, the track ids the SFU assigns. */
export function parseTrackId(id: string): TrackRef | undefined {
  const m = /^(audio|video)-(.+)$/.exec(id);
  if (!m || m[1] === undefined || m[2] === undefined) return undefined;
  return { kind: m[1] as MediaKind, participantId: m[2] };
}

/**
 * Inbound entries of the subscribe connection. `resolve` maps an entry's
 * `trackIdentifier` (or, lacking one, its `mid`) to a participant; entries it
 * cannot map are left out.
 */
export function inboundStats(
  report: StatsReportLike,
  resolve: (trackIdentifier: string | undefined, mid: string | undefined) => TrackRef | undefined,
): InboundStats[] {
  const out: InboundStats[] = [];
  report.forEach((e) => {
    if (e['type'] !== 'inbound-rtp') return;
    const trackId = typeof e['trackIdentifier'] === 'string' ? e['trackIdentifier'] : undefined;
    const mid = typeof e['mid'] === 'string' ? e['mid'] : undefined;
    const ref = resolve(trackId, mid);
    if (!ref) return;
    const row: InboundStats = {
      participantId: ref.participantId,
      kind: kindOf(e) ?? ref.kind,
      trackId: trackId ?? '',
      packetsReceived: num(e, 'packetsReceived'),
      bytesReceived: num(e, 'bytesReceived'),
      framesDecoded: num(e, 'framesDecoded'),
      frameWidth: num(e, 'frameWidth'),
      frameHeight: num(e, 'frameHeight'),
      framesPerSecond: num(e, 'framesPerSecond'),
      freezeCount: num(e, 'freezeCount'),
      pliCount: num(e, 'pliCount'),
      nackCount: num(e, 'nackCount'),
      jitter: num(e, 'jitter'),
      packetsLost: num(e, 'packetsLost'),
    };
    for (const k of ['totalFreezesDuration', 'keyFramesDecoded', 'audioLevel'] as const) {
      const v = e[k];
      if (typeof v === 'number' && Number.isFinite(v)) row[k] = v;
    }
    out.push(row);
  });
  out.sort((a, b) =>
    a.participantId === b.participantId
      ? a.kind.localeCompare(b.kind)
      : a.participantId.localeCompare(b.participantId),
  );
  return out;
}

/**
 * Outbound entries of the publish connection. `activeOf` gives the sender's
 * encoding state of a kind (and RID) for entries that do not carry `active`
 * themselves. Rows are sorted by kind, then by the position of their RID in
 * `ridOrder` (the sender's encodings), then by RID.
 */
export function outboundStats(
  report: StatsReportLike,
  activeOf: (kind: MediaKind, rid: string | null) => boolean | null = () => null,
  ridOrder: readonly string[] = [],
): OutboundStats[] {
  const out: OutboundStats[] = [];
  report.forEach((e) => {
    if (e['type'] !== 'outbound-rtp') return;
    const kind = kindOf(e);
    if (!kind) return;
    const rid = typeof e['rid'] === 'string' && e['rid'] !== '' ? e['rid'] : null;
    out.push({
      kind,
      rid,
      packetsSent: num(e, 'packetsSent'),
      bytesSent: num(e, 'bytesSent'),
      framesEncoded: num(e, 'framesEncoded'),
      frameWidth: num(e, 'frameWidth'),
      frameHeight: num(e, 'frameHeight'),
      framesPerSecond: num(e, 'framesPerSecond'),
      pliCount: num(e, 'pliCount'),
      nackCount: num(e, 'nackCount'),
      firCount: num(e, 'firCount'),
      retransmittedPacketsSent: num(e, 'retransmittedPacketsSent'),
      targetBitrate: num(e, 'targetBitrate'),
      qualityLimitationReason:
        typeof e['qualityLimitationReason'] === 'string' ? e['qualityLimitationReason'] : '',
      scalabilityMode: typeof e['scalabilityMode'] === 'string' ? e['scalabilityMode'] : '',
      active: typeof e['active'] === 'boolean' ? e['active'] : activeOf(kind, rid),
    });
  });
  const pos = (rid: string | null) => {
    if (rid === null) return -1;
    const i = ridOrder.indexOf(rid);
    return i < 0 ? ridOrder.length : i;
  };
  out.sort(
    (a, b) =>
      a.kind.localeCompare(b.kind) || pos(a.rid) - pos(b.rid) || (a.rid ?? '').localeCompare(b.rid ?? ''),
  );
  return out;
}

/**
 * `availableOutgoingBitrate` of the report's selected candidate pair (the
 * transport's `selectedCandidatePairId`, else a nominated, succeeded pair); 0
 * when unknown.
 */
export function uplinkEstimate(report: StatsReportLike): number {
  let selected: string | undefined;
  const pairs: Entry[] = [];
  report.forEach((e) => {
    if (e['type'] === 'transport' && typeof e['selectedCandidatePairId'] === 'string') selected = e['selectedCandidatePairId'];
    if (e['type'] === 'candidate-pair') pairs.push(e);
  });
  const pair =
    pairs.find((e) => selected !== undefined && e['id'] === selected) ??
    pairs.find((e) => e['nominated'] === true && e['state'] === 'succeeded');
  return pair ? num(pair, 'availableOutgoingBitrate') : 0;
}
