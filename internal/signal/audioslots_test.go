package signal

import "testing"

func TestRoomSettingsAudioSlots(t *testing.T) {
	in, err := Decode([]byte(`{"type":"room-settings","audioSlots":2}`))
	if err != nil || in.Settings == nil || in.Settings.AudioSlots == nil || *in.Settings.AudioSlots != 2 {
		t.Fatalf("audioSlots 2: %+v, %v", in.Settings, err)
	}
	for _, bad := range []string{`-1`, `17`} {
		if _, err := Decode([]byte(`{"type":"room-settings","audioSlots":` + bad + `}`)); err == nil {
			t.Errorf("audioSlots %s accepted, want 0..16", bad)
		}
	}
}
