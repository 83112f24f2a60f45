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
      '{"type":"speaker","id":"p1"}',
      '{"type":"ping","ts":1}',
      '{"type":"welcome","id":"p1"}',
      '{"type":"offer","pc":"publish"}',
      '{"type":"candidate","pc":"publish"}',
      '{"type":"participant-left"}',
      '{"type":"participant-joined","participant":{"id":"p1"}}',
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
});
