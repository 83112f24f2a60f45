// The side panel of the room page: participants, chat and devices, each opened
// by its footer button; the panel takes room from the gallery only while one
// of them is open.

import type { Conference } from '../protocol';
import { ChatPanel } from './chat';
import { DevicesPanel } from './devices';
import { h, icon } from './dom';
import type { VideoSize } from './media';
import { PeoplePanel } from './people';

const settingsIcon =
  '<svg viewBox="0 0 24 24" width="20" height="20" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M4 6h10M18 6h2M4 12h4M12 12h8M4 18h12M20 18h0"/><circle cx="16" cy="6" r="2"/><circle cx="10" cy="12" r="2"/><circle cx="18" cy="18" r="2"/></svg>';

export interface SideOptions {
  conference: Conference;
  stream: MediaStream | null;
  videoSize: VideoSize;
  /** The gallery's element: its tiles get the raised-hand mark, its media elements the speaker. */
  gallery: HTMLElement;
  speaker?: string;
  onCamera(track: MediaStreamTrack): void;
  onProblem(text: string): void;
}

export interface Side {
  /** `aside.side`, hidden while no panel is open. */
  el: HTMLElement;
  /** Footer buttons, in order: raise hand, devices, participants, chat. */
  buttons: HTMLButtonElement[];
  chat: ChatPanel;
  people: PeoplePanel;
  devices: DevicesPanel;
}

export function sidePanels(o: SideOptions): Side {
  const el = h('aside', { class: 'side', attrs: { 'aria-label': 'Side panel' } });
  el.hidden = true;
  const update = () => {
    el.hidden = [...el.children].every((c) => (c as HTMLElement).hidden);
  };
  const people = new PeoplePanel(o.conference, o.gallery, update);
  const chat = new ChatPanel(o.conference, update);
  const devices = new DevicesPanel({
    conference: o.conference,
    stream: o.stream,
    videoSize: o.videoSize,
    mediaRoot: o.gallery,
    onCamera: o.onCamera,
    onProblem: o.onProblem,
    ...(o.speaker ? { speaker: o.speaker } : {}),
  });
  const devicesButton = h(
    'button',
    { class: 'ctl compact devices-toggle', attrs: { type: 'button', 'aria-controls': 'devices-panel', 'aria-expanded': 'false', title: 'Camera, microphone and speaker' } },
    icon(settingsIcon),
    h('span', { text: 'Devices' }),
  );
  devices.el.id = 'devices-panel';
  devicesButton.addEventListener('click', () => {
    const open = devices.el.hidden;
    devices.setOpen(open);
    devicesButton.setAttribute('aria-expanded', String(open));
    devicesButton.classList.toggle('on', open);
    update();
  });
  el.append(people.el, devices.el, chat.el);
  return { el, buttons: [people.handButton, devicesButton, people.button, chat.button], chat, people, devices };
}
