package peer

import (
	"strings"

	"github.com/pion/sdp/v3"
)

// OfferedRIDs lists the simulcast RIDs a publish offer (a browser's or a WHIP
// publisher's) declares for video (`a=rid:<id> send`). Their tracks only appear
// once packets arrive, and a sender still ramping up must not be told that the
// encodings it has not started yet are unneeded.
func OfferedRIDs(offer string) []string {
	var desc sdp.SessionDescription
	if desc.Unmarshal([]byte(offer)) != nil {
		return nil
	}
	var rids []string
	for _, m := range desc.MediaDescriptions {
		if m.MediaName.Media != "video" {
			continue
		}
		for _, a := range m.Attributes {
			if a.Key != "rid" {
				continue
			}
			if fields := strings.Fields(a.Value); len(fields) >= 2 && fields[1] == "send" {
				rids = append(rids, fields[0])
			}
		}
	}
	return rids
}
