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
