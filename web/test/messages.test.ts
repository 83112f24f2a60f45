import { describe, expect, it } from 'vitest';
import { parseServerMessage } from '../src/protocol/messages';

describe('parseServerMessage', () => {
  it('parses every server message of protocol version 1', () => {
    const cases: [unknown, unknown][] = [
      [
        {
          type: 'welcome',
          version: 1,
          id: 'p8f3a2c1d',
          room: 'standup',
          resume: { id: 'p8f3a2c1d', secret: '4b1d' },
          participants: [{ id: 'p1c2d3e4f', name: 'Bob', audioMuted: false, videoMuted: true }],
          iceServers: [{ urls: ['stun:stun.example.org:3478'] }, { urls: 'turn:t', username: 'u', credential: 'c' }],
        },
        {
          type: 'welcome',
          version: 1,
          id: 'p8f3a2c1d',
          room: 'standup',
          resume: { id: 'p8f3a2c1d', secret: '4b1d' },
          participants: [{ id: 'p1c2d3e4f', name: 'Bob', audioMuted: false, videoMuted: true }],
          iceServers: [{ urls: ['stun:stun.example.org:3478'] }, { urls: 'turn:t', username: 'u', credential: 'c' }],
        },
      ],
      [
        {
          type: 'welcome',
          version: 1,
          id: 'pV',
          room: 'hall',
          resume: { id: 'pV', secret: 's' },
          participants: [{ id: 'pW', name: 'Wes', audioMuted: false, videoMuted: false, audience: true }],
          iceServers: [],
          permissions: { publish: false, subscribe: true, admin: false },
        },
        {
          type: 'welcome',
          version: 1,
          id: 'pV',
          room: 'hall',
          resume: { id: 'pV', secret: 's' },
          participants: [{ id: 'pW', name: 'Wes', audioMuted: false, videoMuted: false, audience: true }],
          iceServers: [],
          permissions: { publish: false, subscribe: true, admin: false },
        },
      ],
      [{ type: 'offer', pc: 'subscribe', sdp: 'v=0' }, { type: 'offer', pc: 'subscribe', sdp: 'v=0' }],
      [{ type: 'answer', pc: 'publish', sdp: 'v=0' }, { type: 'answer', pc: 'publish', sdp: 'v=0' }],
      [
        { type: 'candidate', pc: 'publish', candidate: { candidate: 'candidate:1', sdpMid: '0', sdpMLineIndex: 0 } },
        { type: 'candidate', pc: 'publish', candidate: { candidate: 'candidate:1', sdpMid: '0', sdpMLineIndex: 0 } },
      ],
      [{ type: 'candidate', pc: 'subscribe', candidate: null }, { type: 'candidate', pc: 'subscribe', candidate: null }],
      [
        { type: 'participant-joined', participant: { id: 'p1', name: 'Bob', audioMuted: false, videoMuted: false } },
        { type: 'participant-joined', participant: { id: 'p1', name: 'Bob', audioMuted: false, videoMuted: false } },
      ],
      [
        { type: 'participant-updated', participant: { id: 'p1', name: 'Bob', audioMuted: true, videoMuted: false } },
        { type: 'participant-updated', participant: { id: 'p1', name: 'Bob', audioMuted: true, videoMuted: false } },
      ],
      [{ type: 'participant-left', id: 'p1' }, { type: 'participant-left', id: 'p1' }],
      [{ type: 'pong', ts: 1732270000000 }, { type: 'pong', ts: 1732270000000 }],
      [
        { type: 'error', code: 'bad-sdp', message: 'm', fatal: false },
        { type: 'error', code: 'bad-sdp', message: 'm', fatal: false },
      ],
      [{ type: 'bye', reason: 'server shutting down' }, { type: 'bye', reason: 'server shutting down' }],
      [{ type: 'speaker', id: 'p1c2d3e4f' }, { type: 'speaker', id: 'p1c2d3e4f' }],
      [{ type: 'speaker', id: '' }, { type: 'speaker', id: '' }],
      [
        { type: 'forwarded', ids: ['p1c2d3e4f', 'p9a8b7c6d'], lastN: 2 },
        { type: 'forwarded', ids: ['p1c2d3e4f', 'p9a8b7c6d'], lastN: 2 },
      ],
      [{ type: 'forwarded', ids: [], lastN: -1 }, { type: 'forwarded', ids: [], lastN: -1 }],
      [{ type: 'pause-video' }, { type: 'pause-video' }],
      [{ type: 'resume-video' }, { type: 'resume-video' }],
      [{ type: 'room', lastN: 8, onStage: [] }, { type: 'room', lastN: 8, onStage: [] }],
      [{ type: 'room', lastN: 4, onStage: ['p1c2d3e4f'] }, { type: 'room', lastN: 4, onStage: ['p1c2d3e4f'] }],
      [{ type: 'layers', active: ['q', 'f'] }, { type: 'layers', active: ['q', 'f'] }],
      [{ type: 'layers', active: [] }, { type: 'layers', active: [] }],
      [{ type: 'suspended', ids: ['p1c2d3e4f'] }, { type: 'suspended', ids: ['p1c2d3e4f'] }],
      [{ type: 'suspended', ids: [] }, { type: 'suspended', ids: [] }],
      [
        {
          type: 'stats',
          estimate: 2400000,
          allocated: 1800000,
          switches: 3,
          videos: { p1c2d3e4f: { encoding: 2, temporal: 2, bitrate: 1500000, suspended: false } },
        },
        {
          type: 'stats',
          estimate: 2400000,
          allocated: 1800000,
          switches: 3,
          videos: { p1c2d3e4f: { encoding: 2, temporal: 2, bitrate: 1500000, suspended: false } },
        },
      ],
      [
        { type: 'stats', estimate: 0, allocated: 0, switches: 0, videos: { p9: { encoding: -1, temporal: 0, bitrate: 0, suspended: true } } },
        { type: 'stats', estimate: 0, allocated: 0, switches: 0, videos: { p9: { encoding: -1, temporal: 0, bitrate: 0, suspended: true } } },
      ],
    ];
    for (const [input, want] of cases) {
      expect(parseServerMessage(JSON.stringify(input))).toEqual(want);
    }
  });

  it('rejects unknown types and malformed messages', () => {
    const bad = [
      'nope',
      '"str"',
      'null',
      '[]',
      '{}',
      '{"type":"layers","encodings":[]}',
      '{"type":"layers"}',
      '{"type":"layers","active":"q"}',
      '{"type":"constraints"}',
      '{"type":"ping","ts":1}',
      '{"type":"pin","id":"p1"}',
      '{"type":"speaker","id":3}',
      '{"type":"forwarded","ids":"p1","lastN":1}',
      '{"type":"forwarded","ids":[],"lastN":1.5}',
      '{"type":"forwarded","ids":[],"lastN":-2}',
      '{"type":"forwarded","ids":[],"lastN":"2"}',
      '{"type":"room","lastN":8,"onStage":{}}',
      '{"type":"room","lastN":true,"onStage":[]}',
      '{"type":"welcome","id":"p1"}',
      '{"type":"offer","pc":"publish"}',
      '{"type":"candidate","pc":"publish"}',
      '{"type":"participant-left"}',
      '{"type":"participant-joined","participant":{"id":"p1"}}',
      '{"type":"suspended","ids":"p1"}',
      '{"type":"suspended","ids":{}}',
      '{"type":"stats","estimate":-1,"allocated":0,"switches":0,"videos":{}}',
      '{"type":"stats","estimate":"2400000","allocated":0,"switches":0,"videos":{}}',
      '{"type":"stats","estimate":1,"allocated":1e999,"switches":0,"videos":{}}',
      '{"type":"stats","estimate":1,"allocated":1,"switches":true,"videos":{}}',
      '{"type":"stats","estimate":1,"allocated":1,"switches":0,"videos":[]}',
      '{"type":"stats","estimate":1,"allocated":1,"switches":0,"videos":"p1"}',
    ];
    for (const b of bad) expect(parseServerMessage(b), b).toBeUndefined();
  });

  it('drops unknown fields and invalid entries', () => {
    const m = parseServerMessage(
      JSON.stringify({
        type: 'welcome',
        id: 'p1',
        resume: { id: 'p1', secret: 's', extra: true },
        participants: [{ id: 'p2', name: 'B', x: 1 }, { name: 'no id' }],
        iceServers: [{ urls: 3 }, { urls: 'stun:127.0.0.1' }],
        future: 'field',
      }),
    );
    expect(m).toEqual({
      type: 'welcome',
      version: 1,
      id: 'p1',
      room: '',
      resume: { id: 'p1', secret: 's' },
      participants: [{ id: 'p2', name: 'B', audioMuted: false, videoMuted: false }],
      iceServers: [{ urls: 'stun:127.0.0.1' }],
    });
  });

  it('is lenient where Go omits or nils fields', () => {
    // nil slices encode as null; omitempty drops empty strings
    expect(parseServerMessage('{"type":"forwarded","ids":null,"lastN":0}')).toEqual({ type: 'forwarded', ids: [], lastN: 0 });
    expect(parseServerMessage('{"type":"room","lastN":-1,"onStage":null}')).toEqual({ type: 'room', lastN: -1, onStage: [] });
    expect(parseServerMessage('{"type":"speaker"}')).toEqual({ type: 'speaker', id: '' });
    // a missing lastN is "unknown" (-1); invalid ids and duplicates are dropped
    expect(parseServerMessage('{"type":"forwarded","ids":["a",1,"","b","a"]}')).toEqual({
      type: 'forwarded',
      ids: ['a', 'b'],
      lastN: -1,
    });
    expect(parseServerMessage('{"type":"pause-video","extra":1}')).toEqual({ type: 'pause-video' });
    expect(parseServerMessage('{"type":"layers","active":null}')).toEqual({ type: 'layers', active: [] });
    expect(parseServerMessage('{"type":"layers","active":["f",1,"","f","q"]}')).toEqual({ type: 'layers', active: ['f', 'q'] });
    expect(parseServerMessage('{"type":"suspended","ids":null}')).toEqual({ type: 'suspended', ids: [] });
    expect(parseServerMessage('{"type":"suspended"}')).toEqual({ type: 'suspended', ids: [] });
    expect(parseServerMessage('{"type":"suspended","ids":["a",2,"","a","b"]}')).toEqual({ type: 'suspended', ids: ['a', 'b'] });
  });

  it('keeps the valid entries of stats and fills in what Go may leave out', () => {
    // a nil map encodes as null; missing numbers are "none"
    expect(parseServerMessage('{"type":"stats","videos":null}')).toEqual({
      type: 'stats',
      estimate: 0,
      allocated: 0,
      switches: 0,
      videos: {},
    });
    const m = parseServerMessage(
      JSON.stringify({
        type: 'stats',
        estimate: 900000,
        allocated: 750000,
        switches: 1,
        future: true,
        videos: {
          ok: { encoding: 0, temporal: 1, bitrate: 150000, suspended: false, extra: 'x' },
          partial: { encoding: 1 },
          '': { encoding: 0, temporal: 0, bitrate: 0, suspended: false },
          notObject: 3,
          badEncoding: { encoding: -2, temporal: 0, bitrate: 0 },
          fractional: { encoding: 1.5, temporal: 0, bitrate: 0 },
          badBitrate: { encoding: 0, temporal: 0, bitrate: -5 },
          badTemporal: { encoding: 0, temporal: 'x', bitrate: 0 },
        },
      }),
    );
    expect(m).toEqual({
      type: 'stats',
      estimate: 900000,
      allocated: 750000,
      switches: 1,
      videos: {
        ok: { encoding: 0, temporal: 1, bitrate: 150000, suspended: false },
        partial: { encoding: 1, temporal: -1, bitrate: 0, suspended: false },
      },
    });
    // an id that is also an Object.prototype name stays plain data
    const proto = parseServerMessage('{"type":"stats","videos":{"__proto__":{"encoding":1,"temporal":0,"bitrate":1}}}');
    expect(proto?.type === 'stats' && Object.hasOwn(proto.videos, '__proto__')).toBe(true);
    expect(Object.getPrototypeOf(proto?.type === 'stats' ? proto.videos : null)).toBe(Object.prototype);
  });
});
