import { describe, expect, it } from 'vitest';
import { parseRedirect, withRegion } from '../src/protocol/redirect';

describe('redirect', () => {
  it('parses a redirect to a ws(s) URL', () => {
    const m = parseRedirect(
      JSON.stringify({ type: 'redirect', url: 'ws://10.0.0.2:7880/ws?region=eu&bridge=n1', node: 'n1', region: 'eu', reason: 'least-loaded-in-region' }),
    );
    expect(m).toEqual({ type: 'redirect', url: 'ws://10.0.0.2:7880/ws?region=eu&bridge=n1', node: 'n1', region: 'eu', reason: 'least-loaded-in-region' });
  });
  it('refuses other schemes, bad JSON and other messages', () => {
    expect(parseRedirect('{"type":"redirect","url":"javascript:alert(1)"}')).toBeUndefined();
    expect(parseRedirect('{"type":"redirect","url":"https://x/ws"}')).toBeUndefined();
    expect(parseRedirect('{"type":"redirect"}')).toBeUndefined();
    expect(parseRedirect('{"type":"redirect",')).toBeUndefined();
    expect(parseRedirect('{"type":"pong","ts":1}')).toBeUndefined();
  });
  it('adds the page region to the signaling URL', () => {
    expect(withRegion('ws://h:1/ws', '?name=a&region=us-west')).toBe('ws://h:1/ws?region=us-west');
    expect(withRegion('ws://h:1/ws', '?name=a')).toBe('ws://h:1/ws');
    expect(withRegion('ws://h:1/ws', '?region=bad%20one')).toBe('ws://h:1/ws');
  });
});

describe('a conference follows a redirect', () => {
  it('joins again at the bridge, with the same join, and reconnects there', async () => {
    const { Conference } = await import('../src/protocol');
    const { FakeClock, FakeWebSocket, FakePeerConnection } = await import('./fakes');
    const sockets: InstanceType<typeof FakeWebSocket>[] = [];
    const clock = new FakeClock();
    const conf = new Conference({
      room: 'standup',
      name: 'Alice',
      token: 'tok',
      url: 'ws://node1:7880/ws',
      clock,
      createWebSocket: (url) => {
        const ws = new FakeWebSocket(url);
        sockets.push(ws);
        return ws;
      },
      createPeerConnection: (cfg) => new FakePeerConnection(cfg),
      logger: { debug: () => {}, warn: () => {} },
    });
    conf.join();
    sockets[0]!.open();
    const bridge = 'ws://node2:7880/ws?region=eu&bridge=n2';
    sockets[0]!.receive({ type: 'redirect', url: bridge, node: 'n2', region: 'eu', reason: 'least-loaded-in-region' });
    expect(sockets).toHaveLength(2);
    expect(sockets[0]!.closedByClient).toBeDefined();
    expect(sockets[1]!.url).toBe(bridge);
    sockets[1]!.open();
    expect(sockets[1]!.sent[0]).toEqual({ type: 'join', version: 1, room: 'standup', name: 'Alice', token: 'tok' });
    // A lost connection reconnects to the bridge, not to the entry node.
    sockets[1]!.serverClose(1006);
    clock.advance(60_000);
    expect(sockets.length).toBeGreaterThan(2);
    expect(sockets[sockets.length - 1]!.url).toBe(bridge);
    conf.leave();
  });

  it('stops following a redirect loop and starts over with backoff', async () => {
    const { Conference } = await import('../src/protocol');
    const { FakeClock, FakeWebSocket, FakePeerConnection } = await import('./fakes');
    const sockets: InstanceType<typeof FakeWebSocket>[] = [];
    const clock = new FakeClock();
    const conf = new Conference({
      room: 'r',
      name: 'A',
      url: 'ws://node1:7880/ws',
      clock,
      createWebSocket: (url) => {
        const ws = new FakeWebSocket(url);
        sockets.push(ws);
        return ws;
      },
      createPeerConnection: (cfg) => new FakePeerConnection(cfg),
      logger: { debug: () => {}, warn: () => {} },
    });
    conf.join();
    for (let i = 0; i < 10 && sockets.length <= 5; i++) {
      const s = sockets[sockets.length - 1]!;
      s.open();
      s.receive({ type: 'redirect', url: `ws://node${i % 2}:7880/ws?bridge=n${i % 2}`, node: `n${i % 2}`, region: 'x', reason: 'r' });
    }
    expect(sockets).toHaveLength(5); // the entry node, then 4 redirects followed
    clock.advance(60_000);
    expect(sockets[5]!.url).toBe('ws://node1:7880/ws');
    conf.leave();
  });
});
