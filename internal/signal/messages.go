// Package signal defines the signaling protocol's messages (docs/protocol.md) and
// decodes untrusted frames into them. It knows nothing about rooms or pion.
package signal

import "encoding/json"

// Version is the protocol version a client must send in join.
const Version = 1

// MaxFrameBytes is the default bound of one signaling frame (max-message-bytes);
// larger frames close the connection.
const MaxFrameBytes = 64 << 10

// Message types.
const (
	TypeJoin      = "join"
	TypeOffer     = "offer"
	TypeAnswer    = "answer"
	TypeCandidate = "candidate"
	TypeMute      = "mute"
	TypePing      = "ping"
	TypeLeave     = "leave"
	TypeWelcome   = "welcome"
	TypePong      = "pong"
	TypeError     = "error"
	TypeBye       = "bye"
	TypeJoined    = "participant-joined"
	TypeUpdated   = "participant-updated"
	TypeLeft      = "participant-left"
)

// Peer connection names.
const (
	PCPublish   = "publish"
	PCSubscribe = "subscribe"
)

// Resume lets a reconnecting client keep its participant id.
type Resume struct {
	ID     string `json:"id"`
	Secret string `json:"secret"`
}

// Participant is what others know about a participant.
type Participant struct {
	ID         string `json:"id"`
	Name       string `json:"name"`
	AudioMuted bool   `json:"audioMuted"`
	VideoMuted bool   `json:"videoMuted"`
	HandRaised bool   `json:"handRaised,omitempty"` // raise-hand; absent when lowered
	// Screen is the source id of its screen share while it shares (ScreenSource).
	Screen string `json:"screen,omitempty"`
	// E2EE: it says it encrypts its media end to end (docs/e2ee.md); the
	// server cannot check it and learns nothing more.
	E2EE bool `json:"e2ee,omitempty"`
	// Audience: it joined without the publish permission (receive-only); it
	// sends no media and is never in anyone's Last N.
	Audience bool `json:"audience,omitempty"`
}

// ICEServer mirrors RTCIceServer.
type ICEServer struct {
	URLs       []string `json:"urls"`
	Username   string   `json:"username,omitempty"`
	Credential string   `json:"credential,omitempty"`
}

// Candidate mirrors RTCIceCandidateInit.
type Candidate struct {
	Candidate        string  `json:"candidate"`
	SDPMid           *string `json:"sdpMid,omitempty" tstype:"string | null"` // null is read as absent
	SDPMLineIndex    *uint16 `json:"sdpMLineIndex,omitempty" tstype:"number | null"`
	UsernameFragment *string `json:"usernameFragment,omitempty" tstype:"string | null"`
}

// Join is the first client message.
type Join struct {
	Version int     `json:"version"`
	Room    string  `json:"room"`
	Name    string  `json:"name"`
	Token   string  `json:"token,omitempty"`
	Resume  *Resume `json:"resume,omitempty"`
	// E2EE announces that this participant encrypts its media end to end.
	E2EE bool `json:"e2ee,omitempty"`
	// Audience joins receive-only: without the publish permission whatever the
	// token grants, so the server makes no publish connection for it.
	Audience bool `json:"audience,omitempty"`
	// AudioSlots: the client plays audio slots (TypeAudioSlots), so the
	// server may send it the selected speakers' audio on a fixed set of
	// tracks instead of one track per microphone.
	AudioSlots bool `json:"audioSlots,omitempty"`
}

// SDP is an offer or an answer for one of the two peer connections.
type SDP struct {
	PC  string `json:"pc" tstype:"PcName"`
	SDP string `json:"sdp"`
	// ScreenMids are the mids of a publish offer's sections that carry the
	// sender's screen share (its video, and its audio when shared).
	ScreenMids []string `json:"screenMids,omitempty"`
}

// TrickleCandidate carries one ICE candidate; Candidate nil means end of candidates.
type TrickleCandidate struct {
	PC        string     `json:"pc" tstype:"PcName"`
	Candidate *Candidate `json:"candidate"`
}

// Mute is the sender's own microphone and camera state.
type Mute struct {
	Audio bool `json:"audio"`
	Video bool `json:"video"`
}

// Ping and Pong carry the client's timestamp back.
type Ping struct {
	TS json.Number `json:"ts"`
}

// Welcome answers a successful join.
type Welcome struct {
	Version      int           `json:"version"`
	ID           string        `json:"id"`
	Room         string        `json:"room"`
	Resume       Resume        `json:"resume"`
	Participants []Participant `json:"participants"`
	// ParticipantCount is how many are in the room, this participant too:
	// a big room lists only some of them (docs/protocol.md, "The participant list").
	ParticipantCount int         `json:"participantCount,omitempty"`
	ICEServers       []ICEServer `json:"iceServers"`
	// Permissions granted by the token (all of them in dev mode).
	Permissions *Permissions `json:"permissions,omitempty"`
	// Node is the bridge serving the session (a cluster's node id; empty for a
	// single node).
	Node string `json:"node,omitempty"`
	// Fallbacks are the other healthy nodes' signaling URLs, the bridge's
	// region first, to rejoin through when this bridge stops answering
	// (docs/cluster.md, Failover); each names this bridge with ?lost=.
	Fallbacks []string `json:"fallbacks,omitempty"`
}

// Error tells the client what went wrong; Fatal means the server closes right after.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Fatal   bool   `json:"fatal"`
}

// Bye ends the session for good.
type Bye struct {
	Reason string `json:"reason"`
	Code   string `json:"code,omitempty" tstype:"ByeCode"` // ByeShutdown, ByeRemoved, ByeRoomClosed
}

// ParticipantEvent is participant-joined or participant-updated.
type ParticipantEvent struct {
	Participant Participant `json:"participant"`
}

// ParticipantLeft is participant-left.
type ParticipantLeft struct {
	ID string `json:"id"`
}
