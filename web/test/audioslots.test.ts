import { describe, expect, it } from 'vitest';
import type { ConferenceEvents } from '../src/protocol';
import { parseServerMessage } from '../src/protocol/messages';
import { RemoteMedia, slotIndex } from '../src/protocol/remote';
import { asStream, asTrack, FakeStream, FakeTrack } from './fakes';

type Ev = ['track-added' | 'track-removed', string, MediaStreamTrack];

function setup() {
  const events: Ev[] = [];
  const emitter = {
    emit<K extends keyof ConferenceEvents>(type: K, ev: ConferenceEvents[K]) {
      if (type === 'track-added' || type === 'track-removed') {
        const e = ev as unknown as { participantId: string; track: MediaStreamTrack };
        events.push([type, e.participantId, e.track]);
      }
    },
  };
  const media = new RemoteMedia(emitter, { debug: () => {}, warn: () => {} }, null);
  const slot = (i: number, mid: string) => {
    const t = new FakeTrack('audio', `audio-slot-${i}`);
    media.add({ track: asTrack(t), streams: [asStream(new FakeStream(`audio-slot-${i}`, [t]))], transceiver: { mid } }, () => true);
    return asTrack(t);
  };
  return { media, events, slot };
}

describe('audio slots', () => {
  it('shows each slot as the audio of the participant it carries now', () => {
    const { media, events, slot } = setup();
    const s0 = slot(0, '5');
    const s1 = slot(1, '6');
    expect(events).toEqual([]); // nobody carried yet: nothing shown
    media.setSlots(['pB', 'pC']);
    expect(events).toEqual([
      ['track-added', 'pB', s0],
      ['track-added', 'pC', s1],
    ]);
    expect(media.get('pB').audio?.track).toBe(s0);
    expect(media.resolveStats('audio-slot-0', undefined)).toEqual({ participantId: 'pB', kind: 'audio' });

    // pB's slot now carries pD: pB loses its audio, pD gets the same track;
    // stats (levels) of that track are pD's from now on.
    events.length = 0;
    media.setSlots(['pD', 'pC']);
    expect(events).toEqual([
      ['track-removed', 'pB', s0],
      ['track-added', 'pD', s0],
    ]);
    expect(media.get('pB').audio).toBeUndefined();
    expect(media.resolveStats('audio-slot-0', undefined)).toEqual({ participantId: 'pD', kind: 'audio' });
    expect(media.resolveStats(undefined, '5')).toEqual({ participantId: 'pD', kind: 'audio' });

    events.length = 0;
    media.setSlots(['pD', '']);
    expect(events).toEqual([['track-removed', 'pC', s1]]);
    expect(media.resolveStats('audio-slot-1', undefined)).toBeUndefined();
  });

  it('applies a mapping that arrived before the slot tracks', () => {
    const { media, events, slot } = setup();
    media.setSlots(['', 'pB']);
    slot(0, '1');
    const s1 = slot(1, '2');
    expect(events).toEqual([['track-added', 'pB', s1]]);
  });

  it('a participant has either a track of its own or a slot', () => {
    const { media, events } = setup();
    const own = new FakeTrack('audio', 'audio-pB');
    media.add({ track: asTrack(own), streams: [asStream(new FakeStream('pB', [own]))] }, () => true);
    expect(events).toEqual([['track-added', 'pB', asTrack(own)]]);
    expect(slotIndex('audio-slot-2')).toBe(2);
    expect(slotIndex('pB')).toBeNull();
    expect(slotIndex('audio-slot-x')).toBeNull();
  });

  it('parses audio-slots, keeping empty slots', () => {
    expect(parseServerMessage('{"type":"audio-slots","ids":["pB","","pC"]}')).toEqual({ type: 'audio-slots', ids: ['pB', '', 'pC'] });
    expect(parseServerMessage('{"type":"audio-slots","ids":[1]}')).toBeUndefined();
    expect(parseServerMessage('{"type":"audio-slots"}')).toBeUndefined();
  });
});
