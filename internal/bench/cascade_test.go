package bench

import (
	"context"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/load"
)

// TestNeededBytes: a stream of another bridge counts once per receiving
// bridge, at the most any receiver there got, with the relay's overhead per
// packet; streams of the receiver's own bridge do not count.
func TestNeededBytes(t *testing.T) {
	bridgeOf := map[string]int{"a": 0, "b": 0, "c": 1, "d": 1, "e": 2}
	before := []load.Reception{
		{Receiver: "c", Source: "a", Kind: "video", Packets: 10, Bytes: 10_000},
		{Receiver: "d", Source: "a", Kind: "video", Packets: 5, Bytes: 5_000},
	}
	after := []load.Reception{
		{Receiver: "c", Source: "a", Kind: "video", Packets: 110, Bytes: 110_000}, // 100 packets, 100 kB
		{Receiver: "d", Source: "a", Kind: "video", Packets: 95, Bytes: 95_000},   // 90 packets: less, not added
		{Receiver: "d", Source: "a", Kind: "audio", Packets: 50, Bytes: 5_000},    // new in the window
		{Receiver: "e", Source: "a", Kind: "video", Packets: 100, Bytes: 100_000}, // another bridge: counts again
		{Receiver: "b", Source: "a", Kind: "video", Packets: 100, Bytes: 100_000}, // same bridge: not relayed
		{Receiver: "c", Source: "stranger", Kind: "video", Packets: 9, Bytes: 9},  // not ours
	}
	want := uint64(100_000+100*relayOverhead) + uint64(5_000+50*relayOverhead) + uint64(100_000+100*relayOverhead)
	if got := neededBytes(before, after, bridgeOf); got != want {
		t.Fatalf("needed %d bytes, want %d", got, want)
	}
}

// TestLossAfterRepair: losses split into relayed video, relayed audio and
// all, over the window only.
func TestLossAfterRepair(t *testing.T) {
	bridgeOf := map[string]int{"a": 0, "b": 0, "c": 1}
	before := []load.Reception{{Receiver: "c", Source: "a", Kind: "video", Expected: 100, Received: 90}}
	after := []load.Reception{
		{Receiver: "c", Source: "a", Kind: "video", Expected: 300, Received: 289}, // 1 missed in the window
		{Receiver: "c", Source: "a", Kind: "audio", Expected: 50, Received: 49},
		{Receiver: "b", Source: "a", Kind: "video", Expected: 40, Received: 38}, // local
	}
	video, audio, all := lossAfterRepair(before, after, bridgeOf)
	if video != (Loss{200, 1}) || audio != (Loss{50, 1}) || all != (Loss{290, 4}) {
		t.Fatalf("video %+v audio %+v all %+v", video, audio, all)
	}
}

// The cascade benchmark in a short mode, so it cannot rot: two bridges, four
// participants, Last N = 1, 5 % loss on the relay hops, a few seconds. It
// fails when a bridge relays more than its receivers take (Last N between
// bridges broken) or a receiver misses a relayed audio or video packet
// (relay repair broken).
func TestCascadeBenchShort(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("clusters two bridges and runs real media (~14 s; under the race detector the load generator falls behind)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := Cascade(ctx, CascadeOptions{Bridges: 2, Participants: 4, LastN: 1, Loss: 0.05,
		Warmup: 2 * time.Second, Duration: 4 * time.Second, Margin: 0.25, Seed: 1, Progress: testWriter{t}})
	t.Log(res.Line())
	if err != nil {
		t.Fatal(err)
	}
	// Octo would send both sources' three encodings and audio both ways.
	if res.OctoKbps < 2*res.RelayKbps {
		t.Errorf("relay %.0f kb/s, Octo's baseline %.0f kb/s: Last N between bridges saves too little", res.RelayKbps, res.OctoKbps)
	}
	if res.RelayedVideo.Expected < 100 || res.RelayedAudio.Expected < 100 {
		t.Errorf("receivers expected %d relayed video and %d relayed audio packets in the window: too little to judge",
			res.RelayedVideo.Expected, res.RelayedAudio.Expected)
	}
	if res.AudioRepair.Lost == 0 || res.VideoRepair.Lost == 0 {
		t.Errorf("the relay hops lost no audio (%d) or no video (%d) packet: repair not exercised", res.AudioRepair.Lost, res.VideoRepair.Lost)
	}
}
