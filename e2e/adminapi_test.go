package e2e

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// roomParticipants reads room's participants from the admin API of the server
// at base (its URL, ending in /), each decoded into a T: a struct with the
// fields the caller needs, tagged as the API names them (docs/admin-api.yaml).
func roomParticipants[T any](base, room string) ([]T, error) {
	resp, err := http.Get(base + "api/v1/rooms/" + room + "/participants")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("admin API, participants of %s: %s", room, resp.Status)
	}
	var got struct {
		Participants []T `json:"participants"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		return nil, fmt.Errorf("admin API, participants of %s: %w", room, err)
	}
	return got.Participants, nil
}

// downlinkOf is the admin API's downlink of the participant called name in
// room, without its per-video part, and the RTT of its subscribe connection
// in ms; a nil downlink when nobody of that name has one.
func downlinkOf(base, room, name string) (downlink map[string]any, rttMS float64, err error) {
	ps, err := roomParticipants[struct {
		Name     string         `json:"name"`
		RTT      float64        `json:"rttSubscribeMs"`
		Downlink map[string]any `json:"downlink"`
	}](base, room)
	if err != nil {
		return nil, 0, err
	}
	for _, p := range ps {
		if p.Name == name && p.Downlink != nil {
			delete(p.Downlink, "videos")
			return p.Downlink, p.RTT, nil
		}
	}
	return nil, 0, nil
}
