package signal

// TypeAudioSlots tells a receiver that plays audio slots (Join.AudioSlots)
// whose microphone each of its slots carries now (docs/protocol.md, "Audio
// slots").
const TypeAudioSlots = "audio-slots"

// SlotStreamPrefix starts the stream and track id of every audio slot,
// followed by its number: "audio-slot-0", "audio-slot-1", ... Participant ids
// never contain '-', so no source's stream id starts with it.
const SlotStreamPrefix = "audio-slot-"

// AudioSlots maps a receiver's audio slots to participants: slot i (the
// track and stream "audio-slot-<i>") carries the microphone of IDs[i], ""
// for none. Sent when the receiver joined and whenever a slot's source
// changes; the audio changes source at a packet marked as a talkspurt start
// a moment before or after the message.
type AudioSlots struct {
	IDs []string `json:"ids"`
}
