import { describe, expect, it } from 'vitest';
import { bestGrid, chooseStage } from '../src/ui/layout';
import { parseVideoSize } from '../src/ui/media';
import { route, roomUrl } from '../src/ui/route';

describe('route', () => {
  it('shows the form at /', () => {
    expect(route('/', '')).toEqual({ page: 'form', room: '', name: '', video: null, error: null });
  });
  it('joins a room with a name', () => {
    expect(route('/standup', '?name=Alice%20B&video=320x180')).toEqual({
      page: 'room',
      room: 'standup',
      name: 'Alice B',
      videoSize: { width: 320, height: 180 },
      simulcast: true,
    });
    expect(route('/standup', '?name=A&simulcast=0')).toMatchObject({ page: 'room', simulcast: false });
    expect(route('/standup', '?name=A&simulcast=1')).toMatchObject({ page: 'room', simulcast: true });
    expect(route('/standup/', '?name=A')).toMatchObject({ page: 'room', room: 'standup' });
  });
  it('prefills the room when the name is missing', () => {
    expect(route('/standup', '')).toEqual({ page: 'form', room: 'standup', name: '', video: null, error: null });
  });
  it('rejects invalid rooms and names', () => {
    expect(route('/a%20b', '?name=x')).toMatchObject({ page: 'form', error: expect.any(String) });
    expect(route(`/${'r'.repeat(65)}`, '?name=x')).toMatchObject({ page: 'form' });
    expect(route('/ok', `?name=${'n'.repeat(65)}`)).toMatchObject({ page: 'form', room: 'ok', error: expect.any(String) });
    expect(route('/ok', `?name=${'é'.repeat(64)}`)).toMatchObject({ page: 'room' });
    expect(route('/ok', '?name=a%07b')).toMatchObject({ page: 'form', error: expect.any(String) });
  });
  it('builds room URLs', () => {
    expect(roomUrl('standup', 'Zoë & co', null)).toBe('/standup?name=Zo%C3%AB+%26+co');
    expect(roomUrl('a.b', 'x', '320x180')).toBe('/a.b?name=x&video=320x180');
  });
});

describe('parseVideoSize', () => {
  it('defaults to 1280x720', () => {
    expect(parseVideoSize(null)).toEqual({ width: 1280, height: 720 });
    expect(parseVideoSize('big')).toEqual({ width: 1280, height: 720 });
    expect(parseVideoSize('640x360')).toEqual({ width: 640, height: 360 });
  });
});

describe('bestGrid', () => {
  it('fills a wide stage in one row and a square one in a grid', () => {
    expect(bestGrid(1, 1600, 900, 16 / 9, 0)).toMatchObject({ cols: 1, rows: 1, tileWidth: 1600 });
    expect(bestGrid(2, 1600, 450, 16 / 9, 0)).toMatchObject({ cols: 2, rows: 1 });
    expect(bestGrid(4, 1600, 900, 16 / 9, 0)).toMatchObject({ cols: 2, rows: 2, tileWidth: 800 });
    expect(bestGrid(3, 400, 1200, 16 / 9, 0)).toMatchObject({ cols: 1, rows: 3 });
  });
});

describe('chooseStage', () => {
  const base = { previous: null, speaker: null, self: 'pA', present: ['pB', 'pC', 'pD'], forwarded: null };
  it('puts the dominant speaker on stage', () => {
    expect(chooseStage({ ...base, speaker: 'pC' })).toBe('pC');
    expect(chooseStage({ ...base, previous: 'pB', speaker: 'pD' })).toBe('pD');
  });
  it('keeps the previous occupant when we or nobody speak', () => {
    expect(chooseStage({ ...base, previous: 'pC', speaker: 'pA' })).toBe('pC');
    expect(chooseStage({ ...base, previous: 'pC', speaker: null })).toBe('pC');
    expect(chooseStage({ ...base, previous: 'pC', speaker: 'gone' })).toBe('pC');
  });
  it('falls back to the first forwarded, then the first present participant', () => {
    expect(chooseStage({ ...base, previous: 'gone', forwarded: ['gone', 'pA', 'pD', 'pB'] })).toBe('pD');
    expect(chooseStage({ ...base, forwarded: [] })).toBe('pB');
    expect(chooseStage({ ...base, speaker: 'pA' })).toBe('pB');
  });
  it('prefers someone whose video we receive', () => {
    // the speaker is outside our set (pins fill N): the pinned one takes the stage
    expect(chooseStage({ ...base, speaker: 'pB', forwarded: ['pD'] })).toBe('pD');
    // the previous occupant went dark while we speak
    expect(chooseStage({ ...base, previous: 'pB', speaker: 'pA', forwarded: ['pC'] })).toBe('pC');
    // nobody has video: the speaker, else the previous occupant
    expect(chooseStage({ ...base, previous: 'pC', speaker: 'pB', forwarded: [] })).toBe('pB');
    expect(chooseStage({ ...base, previous: 'pC', speaker: null, forwarded: [] })).toBe('pC');
  });
  it('gives a pin priority over the dominant speaker', () => {
    // a pin beats the speaker, the latest pin wins
    expect(chooseStage({ ...base, speaker: 'pB', pinned: ['pC'] })).toBe('pC');
    expect(chooseStage({ ...base, speaker: 'pB', pinned: ['pC', 'pD'] })).toBe('pD');
    // the latest pin whose video we receive, else the latest pin
    expect(chooseStage({ ...base, speaker: 'pB', pinned: ['pC', 'pD'], forwarded: ['pC', 'pB'] })).toBe('pC');
    expect(chooseStage({ ...base, speaker: 'pB', pinned: ['pC', 'pD'], forwarded: ['pB'] })).toBe('pD');
    // the participant put on stage beats every other pin, even without video yet
    expect(chooseStage({ ...base, speaker: 'pB', pinned: ['pC', 'pD'], staged: 'pC', forwarded: ['pD'] })).toBe('pC');
    // pins of absent participants or of ourselves count for nothing
    expect(chooseStage({ ...base, speaker: 'pB', pinned: ['gone', 'pA'], staged: 'gone' })).toBe('pB');
    // without pins: the speaker rule again
    expect(chooseStage({ ...base, previous: 'pC', speaker: 'pD', pinned: [] })).toBe('pD');
  });
  it('is null when nobody else is here', () => {
    expect(chooseStage({ ...base, present: [], speaker: 'pA', previous: 'pB' })).toBeNull();
  });
});
