package broadcast

import (
	"strings"

	"github.com/pion/sdp/v3"
)

// offeredRIDs lists the simulcast RIDs a WHIP offer declares for video
// (`a=rid:<id> send`), as session does for browsers: every declared encoding
// starts needed while the sender ramps up.
func offeredRIDs(offer string) []string {
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
			if fields := strings.Fields(a.Value); a.Key == "rid" && len(fields) >= 2 && fields[1] == "send" {
				rids = append(rids, fields[0])
			}
		}
	}
	return rids
}
