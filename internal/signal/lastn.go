package signal

// Speaker, Last N and video pausing messages (docs/protocol.md).
const (
	TypeSpeaker      = "speaker"
	TypeForwarded    = "forwarded"
	TypePauseVideo   = "pause-video"
	TypeResumeVideo  = "resume-video"
	TypePin          = "pin"
	TypeUnpin        = "unpin"
	TypeSetLastN     = "set-last-n"
	TypeRoomSettings = "room-settings"
	TypeRoom         = "room"
)

// maxOnStage bounds the on-stage list a client may send.
const maxOnStage = 64

// Speaker names the dominant speaker ("" for nobody).
type Speaker struct {
	ID string `json:"id"`
}

// Forwarded is the video set a receiver now gets, in priority order.
type Forwarded struct {
	IDs   []string `json:"ids"`
	LastN int      `json:"lastN"`
}

// PinTarget is the body of pin and unpin.
type PinTarget struct {
	ID string `json:"id"`
}

// SetLastN is the most videos a receiver wants; -1 for the room's limit.
type SetLastN struct {
	N int `json:"n"`
}

// RoomSettings changes a room's policy; nil fields stay as they are.
type RoomSettings struct {
	LastN   *int     `json:"lastN,omitempty"`
	OnStage []string `json:"onStage,omitempty"`
	// E2EERequired: joins that do not announce e2ee are refused with
	// e2ee-required; participants already in the room stay.
	E2EERequired *bool `json:"e2eeRequired,omitempty"`
	// P2P allows (true) or forbids direct connections while the room has two
	// participants (docs/protocol.md, "Peer to peer").
	P2P *bool `json:"p2p,omitempty"`
	// AudioSlots is how many speakers' audio receivers that play audio slots
	// get (docs/protocol.md, "Audio slots"), 0..16: fewer from the next speaker
	// decision; a session keeps the slots it joined with, and 0 gives later
	// joiners a track per microphone.
	AudioSlots *int `json:"audioSlots,omitempty"`
}

// RoomState is a room's policy as clients see it.
type RoomState struct {
	LastN   int      `json:"lastN"`
	OnStage []string `json:"onStage"`
	// E2EERequired is present while the room admits only participants who
	// announce e2ee.
	E2EERequired bool `json:"e2eeRequired,omitempty"`
	// P2POff is present while the room's setting or the server keeps two
	// participants on the SFU.
	P2POff bool `json:"p2pOff,omitempty"`
}

// Simulcast messages (docs/protocol.md).
const (
	TypeConstraints = "constraints"
	TypeLayers      = "layers"
)

// maxConstraints bounds the videos one constraints message may describe.
const maxConstraints = 256

// VideoConstraint is how a receiver shows one source's video.
type VideoConstraint struct {
	Width  int    `json:"width"`
	Height int    `json:"height"`
	Role   string `json:"role,omitempty" tstype:"'stage' | 'thumbnail'"`
}

// Constraints maps source participant ids to how their videos are shown.
type Constraints struct {
	Videos map[string]VideoConstraint `json:"videos"`
}

// Layers lists the RIDs of a sender's simulcast encodings that someone needs.
type Layers struct {
	Active []string `json:"active"`
}
