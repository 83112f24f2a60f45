// Package broadcast is broadcast in and out of rooms over plain HTTP: WHIP
// ingest (RFC 9725), where a publisher such as OBS or GStreamer POSTs an SDP
// offer and becomes a participant, and WHEP playback, where a player POSTs an
// offer and receives the room's stage on one audio and one video track.
// Both are room members like browser sessions, so they go through the same
// forwarding path, Last N and simulcast (docs/broadcast.md).
package broadcast

import (
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/pion/sdp/v3"
)

// Kind says which of the two protocols a request speaks.
type Kind int

const (
	// WHIP offers send media into a room.
	WHIP Kind = iota
	// WHEP offers receive a room's stage.
	WHEP
)

func (k Kind) String() string {
	if k == WHEP {
		return "WHEP"
	}
	return "WHIP"
}

// MaxOfferBytes bounds an offer's body; a browser's offer with simulcast is
// under 10 KiB.
const MaxOfferBytes = 64 << 10

// RequestError is a refused request: the HTTP status and a text body that
// says why.
type RequestError struct {
	Status int
	Msg    string
	// RetryAfter, when set, goes out as Retry-After (RFC 9110 §10.2.3): when
	// a refusal for load is worth trying again.
	RetryAfter time.Duration
}

func (e *RequestError) Error() string { return e.Msg }

func refuse(status int, format string, args ...any) *RequestError {
	return &RequestError{Status: status, Msg: fmt.Sprintf(format, args...)}
}

// Offer is what a valid request offers.
type Offer struct {
	SDP          string
	Audio, Video bool // an audio / a video section we can use
}

// CheckOffer validates a WHIP or WHEP POST's content type and body before
// pion sees it (pure): application/sdp; a parseable SDP with ICE credentials
// and a DTLS fingerprint; at most one audio and one video section, each in the
// direction the protocol needs (WHIP sends, WHEP receives) and offering the
// codec the SFU forwards (Opus, VP8).
func CheckOffer(kind Kind, contentType string, body []byte) (Offer, *RequestError) {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil || !strings.EqualFold(mt, "application/sdp") {
		return Offer{}, refuse(http.StatusUnsupportedMediaType, "%s offers are Content-Type: application/sdp, not %q", kind, truncate(contentType))
	}
	if len(body) > MaxOfferBytes {
		return Offer{}, refuse(http.StatusRequestEntityTooLarge, "the offer is larger than %d bytes", MaxOfferBytes)
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return Offer{}, refuse(http.StatusBadRequest, "the body is empty: it must be an SDP offer")
	}
	var desc sdp.SessionDescription
	if err := desc.UnmarshalString(string(body)); err != nil {
		return Offer{}, refuse(http.StatusBadRequest, "malformed SDP: %v", err)
	}
	if _, ok := desc.Attribute("fingerprint"); !ok && !everySection(&desc, "fingerprint") {
		return Offer{}, refuse(http.StatusBadRequest, "the offer has no DTLS fingerprint (a=fingerprint)")
	}
	if _, ok := desc.Attribute("ice-ufrag"); !ok && !everySection(&desc, "ice-ufrag") {
		return Offer{}, refuse(http.StatusBadRequest, "the offer has no ICE credentials (a=ice-ufrag, a=ice-pwd)")
	}
	out := Offer{SDP: string(body)}
	for _, m := range desc.MediaDescriptions {
		media := m.MediaName.Media
		if media != "audio" && media != "video" {
			continue // data channels and the like: pion rejects them in the answer
		}
		if m.MediaName.Port.Value == 0 && !hasAttr(m, "bundle-only") {
			continue // rejected section
		}
		if err := checkSection(kind, m); err != nil {
			return Offer{}, err
		}
		have := &out.Audio
		if media == "video" {
			have = &out.Video
		}
		if *have {
			return Offer{}, refuse(http.StatusBadRequest, "the offer has more than one %s section; %s takes one audio and one video", media, kind)
		}
		*have = true
	}
	if !out.Audio && !out.Video {
		return Offer{}, refuse(http.StatusBadRequest, "the offer has no audio or video section")
	}
	return out, nil
}

// checkSection checks one audio or video section's direction and codecs.
func checkSection(kind Kind, m *sdp.MediaDescription) *RequestError {
	dir := "sendrecv"
	for _, a := range m.Attributes {
		switch a.Key {
		case "sendonly", "recvonly", "inactive", "sendrecv":
			dir = a.Key
		}
	}
	media := m.MediaName.Media
	switch {
	case kind == WHIP && (dir == "recvonly" || dir == "inactive"):
		return refuse(http.StatusBadRequest, "the %s section is %s: a WHIP publisher sends (sendonly)", media, dir)
	case kind == WHEP && (dir == "sendonly" || dir == "inactive"):
		return refuse(http.StatusBadRequest, "the %s section is %s: a WHEP player receives (recvonly)", media, dir)
	}
	want := "opus"
	if media == "video" {
		want = "VP8"
	}
	for _, a := range m.Attributes {
		if a.Key != "rtpmap" {
			continue
		}
		// "96 VP8/90000": the encoding name sits between the space and the slash.
		if _, enc, ok := strings.Cut(a.Value, " "); ok {
			name, _, _ := strings.Cut(enc, "/")
			if strings.EqualFold(name, want) {
				return nil
			}
		}
	}
	return refuse(http.StatusBadRequest, "the %s section offers no %s: Podium forwards Opus audio and VP8 video, and never transcodes", media, want)
}

func hasAttr(m *sdp.MediaDescription, key string) bool {
	_, ok := m.Attribute(key)
	return ok
}

// everySection reports whether every audio or video section has the attribute
// (there is at least one).
func everySection(desc *sdp.SessionDescription, key string) bool {
	n := 0
	for _, m := range desc.MediaDescriptions {
		if m.MediaName.Media != "audio" && m.MediaName.Media != "video" {
			continue
		}
		if !hasAttr(m, key) {
			return false
		}
		n++
	}
	return n > 0
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}
