/**
 * Cluster redirects (docs/cluster.md, docs/protocol.md "Redirect"): a node that
 * is not the participant's bridge answers the join with `redirect` and closes;
 * the client joins again at the bridge's URL and keeps using it for reconnects.
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
