/**
 * Cluster redirects (docs/cluster.md, docs/protocol.md "Redirect"): a node that
 * is not the participant's bridge answers the join with `redirect` and closes;
 * the client joins again at the bridge's URL and keeps using it for reconnects.
 * Failover: when the bridge stops answering, the client rejoins through the
 * other nodes its welcome named (`fallbacks`).
 */
import type * as wire from './generated/messages';

export interface RedirectMessage extends wire.Redirect {
  type: typeof wire.TypeRedirect;
}

/** Consecutive redirects without a welcome after which the client stops following them. */
export const MAX_REDIRECTS = 4;

const NAME = /^[A-Za-z0-9_-]{1,32}$/;

/** The `redirect` in a server frame, or undefined (another message, or a bad one). */
export function parseRedirect(text: string): RedirectMessage | undefined {
  if (!text.includes('"redirect"')) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof v !== 'object' || v === null) return undefined;
  const o = v as Record<string, unknown>;
  if (o['type'] !== 'redirect' || typeof o['url'] !== 'string') return undefined;
  let u: URL;
  try {
    u = new URL(o['url']);
  } catch {
    return undefined;
  }
  if (u.protocol !== 'ws:' && u.protocol !== 'wss:') return undefined;
  const text0 = (k: string) => (typeof o[k] === 'string' ? (o[k] as string) : '');
  return { type: 'redirect', url: u.toString(), node: text0('node'), region: text0('region'), reason: text0('reason') };
}

/**
 * The signaling URL with the participant's region from the page's query
 * (`/<room>?region=eu-west`), when it names one.
 */
export function withRegion(url: string, pageSearch: string): string {
  const region = new URLSearchParams(pageSearch).get('region');
  if (region === null || !NAME.test(region)) return url;
  const u = new URL(url);
  u.searchParams.set('region', region);
  return u.toString();
}

/**
 * The URL of reconnect attempt `attempt` (1, 2, …) after a lost session: the
 * bridge first (a short outage keeps the participant there, resumed), then
 * each of the welcome's fallbacks in turn, then the bridge again, and so on.
 */
export function reconnectUrl(bridge: string, fallbacks: readonly string[], attempt: number): string {
  if (attempt <= 1 || fallbacks.length === 0) return bridge;
  const i = (attempt - 2) % (fallbacks.length + 1);
  return fallbacks[i] ?? bridge;
}

/** The welcome's fallbacks that are ws(s) URLs. */
export function parseFallbacks(list: readonly string[] | undefined): string[] {
  const out: string[] = [];
  for (const s of list ?? []) {
    try {
      const u = new URL(s);
      if (u.protocol === 'ws:' || u.protocol === 'wss:') out.push(u.toString());
    } catch {
      // not a URL: skipped
    }
  }
  return out;
}
