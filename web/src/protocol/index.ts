// Public surface of the Podium protocol library (no UI).
export * from './messages';
export * from './conference';
export { CHAT_KEEP, ChatLog, chatTextProblem, MaxChatChars } from './chat';
export type { InboundStats, OutboundStats, ConferenceStats, MediaKind, TrackRef } from './stats';
export { parseTrackId } from './stats';
export { DISPLAY_MEDIA_OPTIONS, SCREEN_ENCODING, isScreenSource, screenSource } from './screen';
export type {
  Clock,
  CodecLike,
  IceCandidateLike,
  PeerConnectionConfig,
  PeerConnectionLike,
  SendEncodingLike,
  SendParametersLike,
  SenderLike,
  SessionDescriptionLike,
  StatsReportLike,
  TimerHandle,
  TrackEventLike,
  TransceiverLike,
  WebSocketLike,
} from './env';
export { realClock } from './env';
