package signal

import "strconv"

// Roster messages (docs/protocol.md, "The participant list"): batched changes
// instead of one message per event, and the list in pages.
const (
	// TypeParticipants (server → client) is the room's changes to the
	// participants it lists since the last one, and the room's size.
	TypeParticipants = "participants"
	// TypeListParticipants (client → server) asks for a page of everyone in
	// the room; TypeParticipantPage answers it.
	TypeListParticipants = "list-participants"
	TypeParticipantPage  = "participant-page"
)

// PageSize is the most participants a participant-page carries.
const PageSize = 100

// ParticipantDiff is a participants message: who to add or update, who left
// (ids a client does not know are ignored), and how many are in the room.
type ParticipantDiff struct {
	Participants []Participant `json:"participants"`
	Left         []string      `json:"left"`
	Count        int           `json:"count"`
}

// ListParticipants asks for the page after Cursor ("": the first).
type ListParticipants struct {
	Cursor string `json:"cursor"`
}

// ParticipantPage is up to PageSize participants in join order from a cursor;
// Next is the cursor of the next page, "" after the last.
type ParticipantPage struct {
	Cursor       string        `json:"cursor"`
	Participants []Participant `json:"participants"`
	Next         string        `json:"next"`
	Count        int           `json:"count"`
}

// PageCursor encodes the join position a page starts after.
func PageCursor(after int) string { return strconv.Itoa(after) }

// ParseCursor reads a cursor: "" is 0, anything else a join position.
func ParseCursor(c string) (int, bool) {
	if c == "" {
		return 0, true
	}
	n, err := strconv.Atoi(c)
	return n, err == nil && n >= 0
}
