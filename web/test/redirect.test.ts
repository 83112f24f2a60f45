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
    expect(sockets[1]!.sent[0]).toEqual({ type: 'join', version: 1, room: 'standup', name: 'Alice', token: 'tok', audioSlots: true });
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

describe('failover (docs/cluster.md)', () => {
  it('tries the bridge, then each fallback in turn, then the bridge again', async () => {
    const { reconnectUrl, parseFallbacks } = await import('../src/protocol/redirect');
    const b = 'ws://b/ws';
    const f = ['ws://f1/ws?lost=b', 'ws://f2/ws?lost=b'];
    expect([1, 2, 3, 4, 5, 6].map((n) => reconnectUrl(b, f, n))).toEqual([b, f[0], f[1], b, f[0], f[1]]);
    expect(reconnectUrl(b, [], 7)).toBe(b);
    expect(parseFallbacks(['ws://f1/ws', 'javascript:x', 'https://x/', 'nope'])).toEqual(['ws://f1/ws']);
    expect(parseFallbacks(undefined)).toEqual([]);
  });

  it('rejoins through the welcome\'s fallbacks when the bridge dies, and keeps the node that welcomed it', async () => {
    const { Conference } = await import('../src/protocol');
    const { FakeClock, FakeWebSocket, FakePeerConnection } = await import('./fakes');
    const sockets: InstanceType<typeof FakeWebSocket>[] = [];
    const clock = new FakeClock();
    const conf = new Conference({
      room: 'standup',
      name: 'Alice',
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
    const welcome = (id: string, fallbacks: string[]) => ({
      type: 'welcome', version: 1, id, room: 'standup', resume: { id, secret: 's' }, participants: [], iceServers: [], fallbacks,
    });
    conf.join();
    sockets[0]!.open();
    const f2 = 'ws://node2:7880/ws?lost=n1&region=us';
    const f3 = 'ws://node3:7880/ws?lost=n1&region=us';
    sockets[0]!.receive(welcome('pa', [f2, f3, 'javascript:alert(1)']));
    // node1 is killed: its socket closes; the first retry goes to node1 (refused), the next to node2.
    sockets[0]!.serverClose(1006);
    clock.advance(300);
    expect(sockets[1]!.url).toBe('ws://node1:7880/ws');
    sockets[1]!.serverClose(1006);
    clock.advance(600);
    expect(sockets[2]!.url).toBe(f2);
    sockets[2]!.open();
    expect(sockets[2]!.sent[0]).toMatchObject({ type: 'join', room: 'standup', resume: { id: 'pa', secret: 's' } });
    sockets[2]!.receive(welcome('pb', ['ws://node3:7880/ws?lost=n2']));
    expect(conf.state).toBe('connected');
    // Reconnects now start at node2, which welcomed us, then fail over to node3.
    sockets[2]!.serverClose(1006);
    clock.advance(300);
    expect(sockets[3]!.url).toBe(f2);
    sockets[3]!.serverClose(1006);
    clock.advance(600);
    expect(sockets[4]!.url).toBe('ws://node3:7880/ws?lost=n2');
    // The fallback sends us on to another bridge: followed at once, not the fallback again.
    sockets[4]!.open();
    const elsewhere = 'ws://node4:7880/ws?bridge=n4&region=us';
    sockets[4]!.receive({ type: 'redirect', url: elsewhere, node: 'n4', region: 'us', reason: 'conference-bridge-in-region' });
    expect(sockets[5]!.url).toBe(elsewhere);
    conf.leave();
  });
});
