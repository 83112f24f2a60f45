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

// One room over two bridges (child processes) in the light receive mode:
// two publishers, one on each bridge, and six light audience members with
// audio slots. Every audience member gets its Last N video and audio through
// its slots with no loss, and hears, through its slots, the speaker on the
// other bridge: audio selection takes relayed microphones. Fails when the
// slots are not filled from a remote bridge, or when light receivers miss
// what they are sent.
func TestAudienceBenchShort(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("two clustered bridges and real media (~25 s; under the race detector the load generator falls behind)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	res, err := Audience(ctx, AudienceOptions{Bridges: 2, Publishers: 2, Receivers: 6, LastN: 1, AudioSlots: 3,
		View: load.View{Width: 320, Height: 180}, Speech: load.SpeechPaper, DTX: true, Light: true,
		JoinInterval: 40 * time.Millisecond, Warmup: 3 * time.Second, Duration: 8 * time.Second, Seed: 1, Command: childCommand})
	t.Log("\n" + res.Table() + res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range res.Bridges {
		if f.HeardRemote != f.Receivers {
			t.Errorf("bridge %d: %d of %d audience members heard the other bridge's speaker through their slots", i, f.HeardRemote, f.Receivers)
		}
		if f.Loss.Expected < 500 {
			t.Errorf("bridge %d: its participants expected %d packets in the window: too few to judge", i, f.Loss.Expected)
		}
		if f.RelayInKbps == 0 {
			t.Errorf("bridge %d: nothing relayed to it", i)
		}
	}
}

// TestParseUDPDrops: the drops of the sockets bound to the port, the last
// column of /proc/net/udp.
func TestParseUDPDrops(t *testing.T) {
	table := `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  1: 0100007F:1EDA 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 1 2 0000000000000000 17
  2: 00000000:1EDA 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 2 2 0000000000000000 3
  3: 0100007F:1EDB 00000000:0000 07 00000000:00000000 00:00000000 00000000     0        0 3 2 0000000000000000 99
`
	if got := parseUDPDrops(table, 0x1EDA); got != 20 {
		t.Fatalf("%d drops, want 20", got)
	}
}

// TestStreamTally: a receiver passes with its slots and Last N videos in
// every second (a switch's overlap allowed now and then), and fails on a
// second without video, with audio outside the slots, or with an extra
// video most of the time.
func TestStreamTally(t *testing.T) {
	rec := func(recv, src, kind string, packets uint64) load.Reception {
		return load.Reception{Receiver: recv, Source: src, Kind: kind, Packets: packets}
	}
	tally := newStreamTally()
	// Four seconds: a gets slot 0 and video x, then y (a switch overlapping
	// both in second 2); b's video stops in second 3; c hears a microphone
	// outside the slots; d gets two videos throughout.
	secs := [][]load.Reception{
		{rec("a", "audio-slot-0", "audio", 0), rec("a", "x", "video", 0), rec("b", "audio-slot-0", "audio", 0), rec("b", "x", "video", 0),
			rec("c", "audio-slot-0", "audio", 0), rec("c", "x", "video", 0), rec("c", "mic", "audio", 0),
			rec("d", "audio-slot-0", "audio", 0), rec("d", "x", "video", 0), rec("d", "y", "video", 0)},
		{rec("a", "audio-slot-0", "audio", 50), rec("a", "x", "video", 20), rec("b", "audio-slot-0", "audio", 50), rec("b", "x", "video", 20),
			rec("c", "audio-slot-0", "audio", 50), rec("c", "x", "video", 20), rec("c", "mic", "audio", 0),
			rec("d", "audio-slot-0", "audio", 50), rec("d", "x", "video", 20), rec("d", "y", "video", 20)},
		{rec("a", "audio-slot-0", "audio", 100), rec("a", "x", "video", 25), rec("a", "y", "video", 10), rec("b", "audio-slot-0", "audio", 100), rec("b", "x", "video", 40),
			rec("c", "audio-slot-0", "audio", 100), rec("c", "x", "video", 40), rec("c", "mic", "audio", 0),
			rec("d", "audio-slot-0", "audio", 100), rec("d", "x", "video", 40), rec("d", "y", "video", 40)},
		{rec("a", "audio-slot-0", "audio", 150), rec("a", "x", "video", 25), rec("a", "y", "video", 30), rec("b", "audio-slot-0", "audio", 150), rec("b", "x", "video", 40),
			rec("c", "audio-slot-0", "audio", 150), rec("c", "x", "video", 60), rec("c", "mic", "audio", 3),
			rec("d", "audio-slot-0", "audio", 150), rec("d", "x", "video", 60), rec("d", "y", "video", 60)},
	}
	for i := 1; i < len(secs); i++ {
		tally.add(secs[i-1], secs[i])
	}
	for name, ok := range map[string]bool{"a": true, "b": false, "c": false, "d": false} {
		why := tally.judge(name, 3, 1)
		if (why == "") != ok {
			t.Errorf("%s: judged %q, want ok %v", name, why, ok)
		}
	}
}
