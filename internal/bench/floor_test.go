package bench

import (
	"context"
	"maps"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/load"
)

// FloorPackets cuts a frame into as many packets as the load generator, with
// the same bytes, full 1,200-byte packets first and the remainder last.
func TestFloorPackets(t *testing.T) {
	for _, n := range []int{1, 100, 1193, 1194, 1195, 2388, 2389, 6500, 15000, 20000} {
		lg, fl := load.Packets(n), FloorPackets(n)
		if len(lg) != len(fl) {
			t.Errorf("%d bytes: %d floor packets, the load generator cuts %d", n, len(fl), len(lg))
		}
		sum := func(s []int) (t int) {
			for _, x := range s {
				t += x
			}
			return t
		}
		if sum(lg) != sum(fl) || sum(fl) != n+6*len(lg) {
			t.Errorf("%d bytes: floor payloads %v (%d), load generator %d", n, fl, sum(fl), sum(lg))
		}
		for i, l := range fl {
			if (i < len(fl)-1 && l != FloorPayload) || l > FloorPayload || l <= 0 {
				t.Errorf("%d bytes: floor payloads %v: want %d-byte packets and the remainder last", n, fl, FloorPayload)
				break
			}
		}
	}
}

// The plan is the scenario: each receiver gets exactly the streams the
// scenario promises it, and over one clip length (4 s, 120 frames) each video
// stream sends exactly its clip, cut as the publishers cut it, and each audio
// stream 200 packets.
func TestFloorPlanIsTheScenario(t *testing.T) {
	for _, name := range load.Scenarios() {
		sc, err := load.StandardScenario(name)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := NewFloorPlan(sc, 7)
		if err != nil {
			t.Fatal(err)
		}
		type key struct{ recv, src, kind string }
		want, got := map[key]int{}, map[key]int{}
		for _, e := range sc.Expected() {
			want[key{e.Receiver, e.Source, e.Kind}] = e.Height
		}
		for _, s := range plan.Streams {
			for _, d := range s.Dests {
				got[key{plan.Receivers[d], s.Source, s.Kind}] = s.Height
			}
		}
		if !maps.Equal(want, got) {
			t.Errorf("%s: the plan's streams differ from the scenario's expectations: %d vs %d", name, len(got), len(want))
		}
		// One clip length of each stream: its first 120 video frames, 200 audio packets.
		packets, bytes, frames := make([]int, len(plan.Streams)), make([]int, len(plan.Streams)), make([]int, len(plan.Streams))
		for tick := time.Duration(0); tick < 5*time.Second; tick += time.Millisecond {
			plan.Due(tick, func(stream int, payloads []int) {
				if frames[stream] == int(4*time.Second/plan.Streams[stream].Period) {
					return
				}
				frames[stream]++
				packets[stream] += len(payloads)
				for _, l := range payloads {
					bytes[stream] += l
				}
			})
		}
		for i, s := range plan.Streams {
			if s.Kind == "audio" {
				if packets[i] != 200 {
					t.Errorf("%s: %s's audio: %d packets in 4 s, want 200", name, s.Source, packets[i])
				}
				continue
			}
			var wp, wb int
			for _, f := range s.video.Frames {
				for _, l := range load.Packets(len(f.Data)) {
					wp++
					wb += l
				}
			}
			if packets[i] != wp || bytes[i] != wb {
				t.Errorf("%s: %s's %dp video: %d packets %d bytes in one clip length, the clip is %d packets %d bytes",
					name, s.Source, s.Height, packets[i], bytes[i], wp, wb)
			}
		}
	}
}

// The floor forwarder delivers exactly the plan's packets: every receiver
// gets, from every stream it receives, the packets the plan made due over a
// second of replay, with the same payload sizes, and nothing else.
func TestFloorReplaySendsTheScenariosPackets(t *testing.T) {
	scenarios := load.Scenarios()
	if testing.Short() {
		scenarios = scenarios[:1]
	}
	const window = time.Second
	for _, name := range scenarios {
		t.Run(name, func(t *testing.T) {
			sc, err := load.StandardScenario(name)
			if err != nil {
				t.Fatal(err)
			}
			plan, err := NewFloorPlan(sc, 3)
			if err != nil {
				t.Fatal(err)
			}
			// What the plan makes due, computed apart from the replay.
			ref, _ := NewFloorPlan(sc, 3)
			due := make([]map[int]int, len(ref.Streams))
			for i := range due {
				due[i] = map[int]int{}
			}
			for tick := time.Duration(0); tick <= window; tick += time.Millisecond {
				ref.Due(tick, func(stream int, payloads []int) {
					for _, l := range payloads {
						due[stream][l]++
					}
				})
			}
			cfg := FloorConfig{Key: newKey()}
			for _, s := range plan.Streams {
				var d []int32
				for _, x := range s.Dests {
					d = append(d, int32(x))
				}
				cfg.Streams = append(cfg.Streams, d)
			}
			var recvs []*floorReceiver
			for range plan.Receivers {
				k := newKey()
				r, err := newFloorReceiver(k, len(plan.Streams), true)
				if err != nil {
					t.Fatal(err)
				}
				defer r.close()
				recvs = append(recvs, r)
				cfg.Dests = append(cfg.Dests, FloorDest{Addr: r.conn.LocalAddr().String(), Key: k})
			}
			f, err := newFloorForwarder(cfg)
			if err != nil {
				t.Fatal(err)
			}
			go f.run()
			defer f.Close()
			in, _ := newGCM(cfg.Key)
			pub, err := net.DialUDP("udp4", nil, f.conn.LocalAddr().(*net.UDPAddr))
			if err != nil {
				t.Fatal(err)
			}
			defer pub.Close()
			var sent atomic.Uint64
			replay(plan, pub, in, time.Now(), window, make(chan struct{}), &sent)
			var want uint64
			for i, s := range ref.Streams {
				for _, n := range due[i] {
					want += uint64(n * len(s.Dests))
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for received(recvs) < want && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond) // anything extra would arrive now
			if sent.Load() != want {
				t.Errorf("the replay sent %d packet × destination, the plan made %d due", sent.Load(), want)
			}
			if f.badPackets.Load() != 0 || f.dropped.Load() != 0 {
				t.Errorf("forwarder: %d bad ingress packets, %d messages dropped", f.badPackets.Load(), f.dropped.Load())
			}
			if f.forwarded.Load() != want {
				t.Errorf("forwarded %d, want %d", f.forwarded.Load(), want)
			}
			for ri, r := range recvs {
				r.close()
				got := r.counts()
				for si, s := range plan.Streams {
					c := got[s.SSRC]
					if !slices.Contains(s.Dests, ri) {
						if c != nil {
							t.Errorf("%s got %d packets of %s's %s, which it does not receive", plan.Receivers[ri], c.Packets, s.Source, s.Kind)
						}
						continue
					}
					if c == nil || !maps.Equal(c.Sizes, due[si]) {
						var sizes map[int]int
						if c != nil {
							sizes = c.Sizes
						}
						t.Errorf("%s got %s's %s as payload sizes %v, the plan made due %v", plan.Receivers[ri], s.Source, s.Kind, sizes, due[si])
					}
				}
			}
			t.Logf("%s: %d packets to %d receivers in %v of replay, %d wake-ups, %d datagrams in %d sendmmsg calls",
				name, want, len(recvs), window, f.wakeups.Load(), f.datagrams.Load(), f.sendCalls.Load())
		})
	}
}

// The floor run through its child process: figures present, nothing lost,
// nothing allocated per packet.
func TestFloorRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Floor(ctx, FloorOptions{Scenario: load.Meeting8, Warmup: 500 * time.Millisecond, Duration: 2 * time.Second,
		Command: floorChildCommand, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("\n%s%s", res.Summary(), res.Line())
	if res.PacketsPerS < 5000 || res.PacketsPerS > 8500 {
		t.Errorf("replayed %.0f packets/s, meeting-8 is about 6,700", res.PacketsPerS)
	}
	if res.CPUMicros <= 0 || res.RSS == 0 {
		t.Errorf("empty figures: %+v", res)
	}
	if res.LossPercent > 0.5 {
		t.Errorf("loss %.3f %%", res.LossPercent)
	}
	if res.AllocsPerPacket > 0.01 {
		t.Errorf("%.4f allocations per forwarded packet", res.AllocsPerPacket)
	}
}
