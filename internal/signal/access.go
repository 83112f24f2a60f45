package signal

// Access control, limits and drain messages (docs/protocol.md).
const (
	TypeToken    = "token"    // client → server: a fresh token for the session
	TypeDraining = "draining" // server → client: the server is shutting down
	TypeMuted    = "muted"    // server → client: an administrator muted you
)

// Bye codes: why the server ended the session.
const (
	ByeShutdown   = "shutdown"    // the server stopped (after draining)
	ByeRemoved    = "removed"     // an administrator removed the participant
	ByeRoomClosed = "room-closed" // an administrator closed the room
	ByeIdle       = "idle"        // joined, but no media connection and no message for media-timeout
)

// TokenRefresh replaces the session's token (same room and identity).
type TokenRefresh struct {
	Token string `json:"token"`
}

// Permissions are what the session may do, sent in welcome.
type Permissions struct {
	Publish   bool `json:"publish"`
	Subscribe bool `json:"subscribe"`
	Admin     bool `json:"admin"`
}

// Draining tells clients the server is shutting down: the session ends at the
// latest at Deadline (RFC 3339), Seconds from now.
type Draining struct {
	Deadline string `json:"deadline"`
	Seconds  int    `json:"seconds"`
}

// Muted is the administrator-enforced mute state of the receiving participant:
// true means the server drops that kind of media from it.
type Muted struct {
	Audio bool `json:"audio"`
	Video bool `json:"video"`
}

// maxTokenBytes bounds a token in join or token messages.
const maxTokenBytes = 4096
