package bench

import (
	"context"
	"maps"
	"math"
	"net"
	"regexp"
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
			t.Logf("%s: %d packets to %d receivers in %v of replay, %d wake-ups, %d datagrams in %d messages, %d sendmmsg calls",
				name, want, len(recvs), window, f.wakeups.Load(), f.datagrams.Load(), f.messages.Load(), f.sendCalls.Load())
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

// Two floor windows merge into the floor over both: counts added, figures
// per packet weighted by each window's packets, not averaged.
func TestMergeFloors(t *testing.T) {
	t0 := time.Unix(1000, 0)
	window := func(secs int, pkts uint64, cpu time.Duration, steal uint64) FloorResult {
		var r FloorResult
		r.fill(FloorStats{}, FloorStats{Forwarded: pkts, Bytes: pkts * 1000, Datagrams: pkts, Messages: pkts / 4, SendCalls: pkts / 10, Wakeups: pkts / 10, Mallocs: 2},
			ProcStats{At: t0}, ProcStats{At: t0.Add(time.Duration(secs) * time.Second), User: cpu / 4, System: cpu * 3 / 4,
				Host: HostCPU{Busy: 1000, Steal: steal}, RSS: pkts})
		return r
	}
	// 10 s at 1,000 pkt/s costing 50 ms (5 µs a packet), then 10 s at
	// 3,000 pkt/s costing 300 ms (10 µs a packet, a slower hour).
	a, b := window(10, 10_000, 50*time.Millisecond, 10), window(10, 30_000, 300*time.Millisecond, 300)
	if a.CPUMicros != 5 || b.CPUMicros != 10 {
		t.Fatalf("the windows: %.2f and %.2f µs a packet, want 5 and 10", a.CPUMicros, b.CPUMicros)
	}
	m := MergeFloors(a, b)
	if m.Forwarded != 40_000 || m.Window != 20*time.Second || m.PacketsPerS != 2000 {
		t.Errorf("merged: %d packets over %v, %.0f pkt/s; want 40,000 over 20s, 2,000", m.Forwarded, m.Window, m.PacketsPerS)
	}
	if want := 350e3 / 40e3; math.Abs(m.CPUMicros-want) > 1e-9 || math.Abs(m.UserMicros+m.SysMicros-want) > 1e-9 {
		t.Errorf("merged CPU %.4f µs a packet (user %.4f, system %.4f), want %.4f: weighted by packets", m.CPUMicros, m.UserMicros, m.SysMicros, want)
	}
	if m.CPUPercent != 1.75 || m.DatagramsPerSend != 10 || m.DatagramsPerMessage != 4 || m.PacketsPerWakeup != 10 || m.AllocsPerPacket != 4.0/40_000 {
		t.Errorf("merged: %.2f %% of a core, %.1f datagrams a send, %.2f a message, %.1f packets a wake-up, %g allocations a packet; want 1.75, 10, 4, 10, 1e-4",
			m.CPUPercent, m.DatagramsPerSend, m.DatagramsPerMessage, m.PacketsPerWakeup, m.AllocsPerPacket)
	}
	if m.StealPercent != 15.5 || m.RSS != 30_000 {
		t.Errorf("merged: steal %.1f %%, RSS %d; want 15.5 (310 of 2,000 busy ticks) and the larger RSS", m.StealPercent, m.RSS)
	}
}

// The result line keeps the order `make bench-short` checks: scenario_held,
// then x_floor and the floor's figures, new fields after them.
func TestForwardLineOrder(t *testing.T) {
	line := ForwardResult{Scenario: "meeting-8"}.Line()
	re := regexp.MustCompile(`^scenario=meeting-8 .*scenario_held=(true|false) x_floor=[0-9.]+ floor_us_per_pkt=[0-9.]+ .*steal_pct=`)
	if !re.MatchString(line) {
		t.Errorf("line out of order: %s", line)
	}
}
