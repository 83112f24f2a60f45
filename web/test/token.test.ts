import { describe, expect, it } from 'vitest';
import { route, withoutToken } from '../src/ui/route';

describe('withoutToken', () => {
  it('removes the token and keeps the room, name and other parameters', () => {
    expect(withoutToken('/standup', '?token=eyJ.a.b&name=Ann', '')).toBe('/standup?name=Ann');
    expect(withoutToken('/standup', '?name=Ann&token=eyJ.a.b&video=320x180', '#x')).toBe('/standup?name=Ann&video=320x180#x');
    expect(withoutToken('/standup', '?token=eyJ.a.b', '')).toBe('/standup');
    expect(withoutToken('/', '?token=t&token=u', '')).toBe('/');
  });
  it('leaves an address without a token alone', () => {
    expect(withoutToken('/standup', '?name=Ann', '')).toBeNull();
    expect(withoutToken('/standup', '', '')).toBeNull();
  });
  it('the cleaned address still routes to the same room and name', () => {
    const clean = new URL(withoutToken('/standup', '?name=Zo%C3%AB&token=t', '') ?? '', 'http://x');
    expect(route(clean.pathname, clean.search)).toMatchObject({ page: 'room', room: 'standup', name: 'Zoë' });
  });
});
