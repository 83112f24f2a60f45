package signal

import (
	"bytes"
	"encoding/json"
	"unicode"
	"unicode/utf8"
)

// Incoming is one decoded client message: Type plus exactly one non-nil body.
type Incoming struct {
	Type        string
	Join        *Join
	SDP         *SDP
	Candidate   *TrickleCandidate
	Mute        *Mute
	Ping        *Ping
	Pin         *PinTarget // pin and unpin
	LastN       *SetLastN
	Settings    *RoomSettings
	Constraints *Constraints
	Token       *TokenRefresh
	Chat        *ChatPost
	Hand        *RaiseHand
	P2P         *P2PSignal // p2p-offer, p2p-answer and p2p-candidate
	P2PState    *P2PState
	List        *ListParticipants
}

// Decode parses and validates one client frame of at most MaxFrameBytes. Errors
// are *ProtocolError: fatal for frames that cannot be understood, non-fatal for an
// unknown type.
func Decode(frame []byte) (Incoming, error) { return DecodeMax(frame, MaxFrameBytes) }

// DecodeMax is Decode with another bound on the frame size (max-message-bytes).
func DecodeMax(frame []byte, maxBytes int) (Incoming, error) {
	if len(frame) > maxBytes {
		return Incoming{}, Errorf(CodeTooLarge, true, "frame of %d bytes exceeds %d", len(frame), maxBytes)
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(frame, &head); err != nil {
		return Incoming{}, Errorf(CodeBadMessage, true, "not a JSON object: %v", err)
	}
	in := Incoming{Type: head.Type}
	var body any
	switch head.Type {
	case TypeJoin:
		in.Join = &Join{}
		body = in.Join
	case TypeOffer, TypeAnswer:
		in.SDP = &SDP{}
		body = in.SDP
	case TypeCandidate:
		in.Candidate = &TrickleCandidate{}
		body = in.Candidate
	case TypeMute:
		in.Mute = &Mute{}
		body = in.Mute
	case TypePing:
		in.Ping = &Ping{}
		body = in.Ping
	case TypePin, TypeUnpin:
		in.Pin = &PinTarget{}
		body = in.Pin
	case TypeSetLastN:
		in.LastN = &SetLastN{}
		body = in.LastN
	case TypeRoomSettings:
		in.Settings = &RoomSettings{}
		body = in.Settings
	case TypeConstraints:
		in.Constraints = &Constraints{}
		body = in.Constraints
	case TypeToken:
		in.Token = &TokenRefresh{}
		body = in.Token
	case TypeChat:
		in.Chat = &ChatPost{}
		body = in.Chat
	case TypeRaiseHand:
		in.Hand = &RaiseHand{}
		body = in.Hand
	case TypeP2POffer, TypeP2PAnswer, TypeP2PCandidate:
		in.P2P = &P2PSignal{}
		body = in.P2P
	case TypeP2PState:
		in.P2PState = &P2PState{}
		body = in.P2PState
	case TypeListParticipants:
		in.List = &ListParticipants{}
		body = in.List
	case TypeLeave:
		return in, nil
	case "":
		return Incoming{}, Errorf(CodeBadMessage, true, "missing \"type\"")
	default:
		return Incoming{}, Errorf(CodeUnknownType, false, "unknown message type %q", truncate(head.Type))
	}
	dec := json.NewDecoder(bytes.NewReader(frame))
	dec.UseNumber()
	if err := dec.Decode(body); err != nil {
		return Incoming{}, Errorf(CodeBadMessage, true, "%s: %v", head.Type, err)
	}
	return in, validate(in)
}

func validate(in Incoming) error {
	switch {
	case in.Join != nil:
		return validateJoin(in.Join)
	case in.SDP != nil:
		if in.SDP.PC != PCPublish && in.SDP.PC != PCSubscribe {
			return Errorf(CodeBadMessage, true, "%s: pc must be %q or %q", in.Type, PCPublish, PCSubscribe)
		}
		if in.SDP.SDP == "" {
			return Errorf(CodeBadSDP, false, "%s: empty sdp", in.Type)
		}
		return validateScreenMids(in.Type, in.SDP)
	case in.Pin != nil:
		if in.Pin.ID == "" || len(in.Pin.ID) > 64 {
			return Errorf(CodeBadMessage, false, "%s: id must be a participant id", in.Type)
		}
	case in.LastN != nil:
		if in.LastN.N < -1 || in.LastN.N > 1000 {
			return Errorf(CodeBadMessage, false, "set-last-n: n must be -1..1000")
		}
	case in.Settings != nil:
		if n := in.Settings.LastN; n != nil && (*n < -1 || *n > 1000) {
			return Errorf(CodeBadMessage, false, "room-settings: lastN must be -1..1000")
		}
		if n := in.Settings.AudioSlots; n != nil && (*n < 0 || *n > 16) {
			return Errorf(CodeBadMessage, false, "room-settings: audioSlots must be 0..16")
		}
		if len(in.Settings.OnStage) > maxOnStage {
			return Errorf(CodeBadMessage, false, "room-settings: at most %d on stage", maxOnStage)
		}
	case in.Constraints != nil:
		if len(in.Constraints.Videos) > maxConstraints {
			return Errorf(CodeBadMessage, false, "constraints: at most %d videos", maxConstraints)
		}
		for id, c := range in.Constraints.Videos {
			if len(id) > 64 || c.Width < 0 || c.Height < 0 || c.Width > 16384 || c.Height > 16384 {
				return Errorf(CodeBadMessage, false, "constraints: bad entry for %q", truncate(id))
			}
		}
	case in.Token != nil:
		if in.Token.Token == "" || len(in.Token.Token) > maxTokenBytes {
			return Errorf(CodeBadMessage, false, "token: must be 1-%d bytes", maxTokenBytes)
		}
	case in.Chat != nil:
		return validateChat(in.Chat)
	case in.P2P != nil:
		return validateP2PSignal(in.Type, in.P2P)
	case in.P2PState != nil:
		return validateP2PState(in.P2PState)
	case in.List != nil:
		if _, ok := ParseCursor(in.List.Cursor); !ok || len(in.List.Cursor) > 10 {
			return Errorf(CodeBadMessage, false, "list-participants: cursor must be one a participant-page gave")
		}
	case in.Candidate != nil:
		if in.Candidate.PC != PCPublish && in.Candidate.PC != PCSubscribe {
			return Errorf(CodeBadMessage, true, "candidate: pc must be %q or %q", PCPublish, PCSubscribe)
		}
	}
	return nil
}

func validateJoin(j *Join) error {
	if j.Version != Version {
		return Errorf(CodeBadVersion, true, "protocol version %d not supported, want %d", j.Version, Version)
	}
	if !ValidRoom(j.Room) {
		return Errorf(CodeBadRoom, true, "room must be 1-64 characters of A-Z a-z 0-9 _ . -")
	}
	if n := utf8.RuneCountInString(j.Name); n < 1 || n > 64 || !utf8.ValidString(j.Name) || hasControl(j.Name) {
		return Errorf(CodeBadName, true, "name must be 1-64 printable characters")
	}
	if len(j.Token) > maxTokenBytes {
		return Errorf(CodeUnauthorized, true, "token longer than %d bytes", maxTokenBytes)
	}
	return nil
}

// ValidRoom reports whether s is an acceptable room name (also used for URL paths).
func ValidRoom(s string) bool {
	if len(s) < 1 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// hasControl reports whether s has a C0 or C1 control character (or DEL).
func hasControl(s string) bool {
	for _, r := range s {
		if unicode.IsControl(r) {
			return true
		}
	}
	return false
}

func truncate(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
