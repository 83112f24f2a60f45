package signal

import (
	"errors"
	"fmt"
)

// Error codes (docs/protocol.md).
const (
	CodeBadMessage         = "bad-message"
	CodeTooLarge           = "too-large"
	CodeUnknownType        = "unknown-type"
	CodeNotJoined          = "not-joined"
	CodeBadVersion         = "bad-version"
	CodeBadRoom            = "bad-room"
	CodeBadName            = "bad-name"
	CodeBadSDP             = "bad-sdp"
	CodeBadCandidate       = "bad-candidate"
	CodeNegotiationTimeout = "negotiation-timeout"
	CodeInternal           = "internal"
	CodeTransportFailed    = "transport-failed" // a peer connection failed or its DTLS ended

	// Access control.
	CodeUnauthorized = "unauthorized"  // no token, or one that does not verify
	CodeTokenExpired = "token-expired" // the token's exp has passed
	CodeForbidden    = "forbidden"     // the token does not allow this room or action
	CodeE2EERequired = "e2ee-required" // the token or the room admits only participants who encrypt end to end

	// Limits and shutdown.
	CodeRoomFull      = "room-full"       // max-participants reached
	CodeServerFull    = "server-full"     // max-rooms reached
	CodeTooManyJoins  = "too-many-joins"  // joins-per-ip exceeded
	CodeTooManyRooms  = "too-many-rooms"  // rooms-per-ip: the address has opened as many live rooms as it may
	CodeRateLimited   = "rate-limited"    // signaling-rate exceeded
	CodeTooManyTracks = "too-many-tracks" // max-tracks exceeded by a publish offer
	CodeDraining      = "draining"        // the server is shutting down and takes no joins
	CodeServerBusy    = "server-busy"     // overloaded: every room is down to audio only, no new joins

	// What a client names must exist and is bounded.
	CodeUnknownParticipant = "unknown-participant" // pin of an id not in the room
	CodeTooManyPins        = "too-many-pins"       // more than room.MaxPins pins
)

// Codes is every error code the server may send, for counters that list them
// all (podium_signaling_errors_total{code}); TestCodesListsEveryCode keeps it
// complete.
var Codes = []string{
	CodeBadMessage, CodeTooLarge, CodeUnknownType, CodeNotJoined, CodeBadVersion, CodeBadRoom, CodeBadName,
	CodeBadSDP, CodeBadCandidate, CodeNegotiationTimeout, CodeInternal, CodeTransportFailed,
	CodeUnauthorized, CodeTokenExpired, CodeForbidden, CodeE2EERequired,
	CodeRoomFull, CodeServerFull, CodeTooManyJoins, CodeTooManyRooms, CodeRateLimited, CodeTooManyTracks, CodeDraining, CodeServerBusy,
	CodeUnknownParticipant, CodeTooManyPins,
	CodeChatTooLong, CodeChatRateLimited,
	CodeP2PNotPeer, CodeP2PTooLarge, CodeP2PRateLimited,
}

// ProtocolError is an error that maps onto an error message for the client.
type ProtocolError struct {
	Code  string
	Fatal bool
	Err   error
}

func (e *ProtocolError) Error() string { return e.Code + ": " + e.Err.Error() }
func (e *ProtocolError) Unwrap() error { return e.Err }

// Errorf builds a ProtocolError.
func Errorf(code string, fatal bool, format string, args ...any) *ProtocolError {
	return &ProtocolError{Code: code, Fatal: fatal, Err: fmt.Errorf(format, args...)}
}

// AsProtocolError maps any error onto a ProtocolError; unknown errors are fatal internal ones.
func AsProtocolError(err error) *ProtocolError {
	var pe *ProtocolError
	if errors.As(err, &pe) {
		return pe
	}
	return &ProtocolError{Code: CodeInternal, Fatal: true, Err: err}
}

// ToMessage is the error message the client receives.
func (e *ProtocolError) ToMessage() Error {
	return Error{Code: e.Code, Message: e.Err.Error(), Fatal: e.Fatal}
}
