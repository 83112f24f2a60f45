package load

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/config"
)

// Five publishers (audio only, one speaker at a time) and a listener play
// audio slots on a server with two: everyone gets two audio tracks, not one
// per microphone, each publisher hears only others, and the listener hears
// the speakers through its slots.
func TestAudioSlotsAgainstServer(t *testing.T) {
	url, _ := startServer(t, func(c *config.Config) { c.AudioSlots = 2 })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := Config{URL: url, Room: "slots", Seed: 1, Speech: SpeechPaper, AudioSlots: true,
		Participants: append(Group("pub", 5, ParticipantSpec{Audio: true, Video: VideoNone}), ParticipantSpec{Name: "listener"})}
	r := startJoined(ctx, t, cfg)
	// tracks: each participant's audio tracks, and how many are slots.
	tracks := func() (audio, slots map[string]int) {
		audio, slots = map[string]int{}, map[string]int{}
		r.tracksMu.Lock()
		defer r.tracksMu.Unlock()
		for _, p := range r.parts {
			for _, x := range p.recv.tracks {
				if x.video {
					continue
				}
				audio[p.spec.Name]++
				if _, ok := slotIndex(x.source); ok {
					slots[p.spec.Name]++
				}
			}
		}
		return audio, slots
	}
	check := func() (bool, string) {
		audio, slots := tracks()
		for _, p := range cfg.Participants {
			if audio[p.Name] != 2 || slots[p.Name] != 2 {
				return false, fmt.Sprintf("%s has %d audio tracks, %d of them slots; want 2 slots and nothing else", p.Name, audio[p.Name], slots[p.Name])
			}
		}
		return true, ""
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		ok, why := check()
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s (last error %q)", why, r.LastError())
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(9 * time.Second) // a few of the paper pattern's 4 s turns
	if ok, why := check(); !ok {
		t.Fatalf("after the turns: %s; slots are never renegotiated", why)
	}
	for _, h := range r.SlotAudio() {
		t.Log(h)
		if _, self := h.Speakers[h.Receiver]; self {
			t.Errorf("%s heard itself", h.Receiver)
		}
		if len(h.Speakers) == 0 {
			t.Errorf("%s heard nobody through its slots", h.Receiver)
		}
		for s := range h.Speakers {
			if s == "listener" {
				t.Errorf("%s heard the listener, who publishes nothing", h.Receiver)
			}
		}
	}
}
