package server

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/podium-sfu/podium/internal/signal"
)

func ptr[T any](v T) *T { return &v }

// TestSharedSettingsMerge: a room's settings key keeps the latest value of
// every field any change set, an emptied stage included (which
// signal.RoomSettings would lose in JSON), and over lays it on what a room
// opening takes from the directory.
func TestSharedSettingsMerge(t *testing.T) {
	var sh sharedSettings
	sh = sh.merge(signal.RoomSettings{LastN: ptr(3), OnStage: []string{"a"}})
	sh = sh.merge(signal.RoomSettings{P2P: ptr(false)})
	sh = sh.merge(signal.RoomSettings{LastN: ptr(5), OnStage: []string{}})
	b, err := json.Marshal(sh)
	if err != nil {
		t.Fatal(err)
	}
	back, err := decodeShared(b)
	if err != nil {
		t.Fatal(err)
	}
	got := back.over(&signal.RoomSettings{LastN: ptr(8), E2EERequired: ptr(true), OnStage: []string{"x"}})
	want := signal.RoomSettings{LastN: ptr(5), OnStage: []string{}, E2EERequired: ptr(true), P2P: ptr(false)}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v, want %+v (stored %s)", got, want, b)
	}
	if got.OnStage == nil {
		t.Fatal("an emptied stage came back as unchanged (nil)")
	}
	if none := (sharedSettings{}).over(nil); !reflect.DeepEqual(none, signal.RoomSettings{}) {
		t.Fatalf("an empty key over nothing: %+v", none)
	}
	if _, err := decodeShared([]byte("{")); err == nil {
		t.Fatal("a broken value decoded")
	}
}

// TestFoundAmongBridges: the first bridge that has what was asked answers;
// when none has it, the bridges that could not be asked are the error, and
// no error means no bridge has it.
func TestFoundAmongBridges(t *testing.T) {
	gone := errors.New("bridge node2: no responders")
	answers := []bridgeAnswer{{node: "node1"}, {node: "node2", err: gone}, {node: "node3", reply: adminReply{Found: true}}}
	if a, ok, err := found(answers); !ok || err != nil || a.node != "node3" {
		t.Fatalf("found %v %v %v, want node3", a, ok, err)
	}
	if _, ok, err := found(answers[:2]); ok || !errors.Is(err, gone) {
		t.Fatalf("none found, one gone: %v %v", ok, err)
	}
	if _, ok, err := found(answers[:1]); ok || err != nil {
		t.Fatalf("none found, all answered: %v %v", ok, err)
	}
}
