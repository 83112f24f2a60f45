package sim

import (
	"time"

	"github.com/podium-sfu/podium/internal/algo/alloc"
	"github.com/podium-sfu/podium/internal/algo/layers"
)

// Layer rates of the standard source: the 180p / 360p / 720p simulcast of
// Jitsi Meet (system spec §5) with libwebrtc's VP8 three-temporal-layer split,
// 180p rounded to 50 / 90 / 150 kb/s (TL0 alone ≈ 7.5 fps).
var (
	Rates180 = [3]int{50_000, 90_000, 150_000}
	Rates360 = [3]int{200_000, 300_000, 500_000}
	Rates720 = [3]int{1_000_000, 1_500_000, 2_500_000}
)

// AudioRate is the audio the allocator reserves in the scenarios.
const AudioRate = 40_000

// Simulcast returns the three standard encodings.
func Simulcast() []alloc.Layer {
	return []alloc.Layer{
		{Width: 320, Height: 180, Active: true, Bitrate: Rates180},
		{Width: 640, Height: 360, Active: true, Bitrate: Rates360},
		{Width: 1280, Height: 720, Active: true, Bitrate: Rates720},
	}
}

// Stage is one on-stage source shown at 720p.
func Stage() []alloc.Source {
	return []alloc.Source{{ID: "stage", Priority: 0, Layers: Simulcast(), Want: layers.Want{Width: 1280, Height: 720}}}
}

// Named scenarios. Each mirrors one target of the issue.
func CapDrop() Scenario {
	return Scenario{
		Name: "cap-drop", Duration: 60 * time.Second, Seed: 1,
		Capacity: []Step{{0, 3_000_000}, {20 * time.Second, 500_000}, {40 * time.Second, 3_000_000}},
		Sources:  Stage(),
	}
}

func Cap128() Scenario {
	return Scenario{
		Name: "cap-128k", Duration: 70 * time.Second, Seed: 2,
		Capacity: []Step{{0, 3_000_000}, {10 * time.Second, 128_000}},
		Sources:  Stage(),
	}
}

// SteadyCap is a constant capacity 10 % above what the top layer and audio
// need (2.5 Mb/s + 40 kb/s + 10 % = 2.794 Mb/s).
func SteadyCap() Scenario {
	return Scenario{
		Name: "steady-threshold", Duration: 120 * time.Second, Seed: 3,
		Capacity: []Step{{0, (Rates720[2] + AudioRate) * 11 / 10}},
		Sources:  Stage(),
	}
}

func RandomLoss() Scenario {
	return Scenario{
		Name: "loss-5pct", Duration: 60 * time.Second, Seed: 4,
		Capacity: []Step{{0, 10_000_000}}, Loss: 0.05,
		Sources: Stage(),
	}
}

func BurstyLoss() Scenario {
	return Scenario{
		Name: "bursty-loss", Duration: 60 * time.Second, Seed: 5,
		Capacity: []Step{{0, 10_000_000}}, Loss: 0.03, BurstLen: 6,
		Sources: Stage(),
	}
}

func Jitter() Scenario {
	return Scenario{
		Name: "jitter", Duration: 60 * time.Second, Seed: 6,
		Capacity: []Step{{0, 5_000_000}}, Jitter: 20 * time.Millisecond,
		Sources: Stage(),
	}
}

// ProbeNoRoom: the allocator wants the top layer but the link carries 1 Mb/s;
// probes must not lift the estimate above it.
func ProbeNoRoom() Scenario {
	return Scenario{
		Name: "probe-no-room", Duration: 60 * time.Second, Seed: 7,
		Capacity: []Step{{0, 1_000_000}},
		Sources:  Stage(),
	}
}

// Gallery: one on-stage source and three thumbnails behind a link that
// shrinks and recovers.
func Gallery() Scenario {
	srcs := Stage()
	for i, id := range []string{"a", "b", "c"} {
		srcs = append(srcs, alloc.Source{ID: id, Priority: i + 1, Layers: Simulcast(), Want: layers.Want{Width: 320, Height: 180}})
	}
	return Scenario{
		Name: "gallery", Duration: 60 * time.Second, Seed: 8,
		Capacity: []Step{{0, 4_000_000}, {20 * time.Second, 600_000}, {40 * time.Second, 4_000_000}},
		Sources:  srcs,
	}
}

// REMBOnly: a receiver without transport-wide feedback that sends REMB.
func REMBOnly() Scenario {
	sc := CapDrop()
	sc.Name = "remb-fallback"
	sc.NoTWCC = true
	sc.REMB = time.Second
	return sc
}

// RatesCamera are a 720p camera's layers as Chromium sends ordinary content
// (top layer about 1.5 Mb/s), for the competition scenarios: the standard
// 2.5 Mb/s top layer alone would take 62 % of their 4 Mb/s link.
var RatesCamera = [3]int{600_000, 900_000, 1_500_000}

// StageCamera is one on-stage source at 720p with RatesCamera on top.
func StageCamera() []alloc.Source {
	ls := Simulcast()
	ls[2].Bitrate = RatesCamera
	return []alloc.Source{{ID: "stage", Priority: 0, Layers: ls, Want: layers.Want{Width: 1280, Height: 720}}}
}

// TCPOne: a 4 Mb/s home link with a 100 ms drop-tail queue; one CUBIC download
// from 20 s to 80 s (the paper's first pattern, scaled).
func TCPOne() Scenario {
	return Scenario{
		Name: "tcp-one", Duration: 100 * time.Second, Seed: 11,
		Capacity: []Step{{0, 4_000_000}}, Queue: 100 * time.Millisecond,
		Sources: StageCamera(), TCP: []TCPFlow{{Start: 20 * time.Second, Stop: 80 * time.Second}},
	}
}

// TCPTen: ten CUBIC downloads started together from 20 s to 60 s.
func TCPTen() Scenario {
	var flows []TCPFlow
	for i := 0; i < 10; i++ {
		flows = append(flows, TCPFlow{Start: 20 * time.Second, Stop: 60 * time.Second})
	}
	return Scenario{
		Name: "tcp-ten", Duration: 80 * time.Second, Seed: 12,
		Capacity: []Step{{0, 4_000_000}}, Queue: 100 * time.Millisecond,
		Sources: StageCamera(), TCP: flows,
	}
}

// TCPStaggered: ten CUBIC downloads started 10 s apart from 20 s, all
// stopping at 120 s (the paper's second pattern).
func TCPStaggered() Scenario {
	var flows []TCPFlow
	for i := 0; i < 10; i++ {
		flows = append(flows, TCPFlow{Start: time.Duration(20+10*i) * time.Second, Stop: 120 * time.Second})
	}
	return Scenario{
		Name: "tcp-staggered", Duration: 140 * time.Second, Seed: 13,
		Capacity: []Step{{0, 4_000_000}}, Queue: 100 * time.Millisecond,
		Sources: StageCamera(), TCP: flows,
	}
}

// TCPOnOff: ten CUBIC downloads on and off together every 20 s from 20 s
// (the paper's third pattern).
func TCPOnOff() Scenario {
	var flows []TCPFlow
	for i := 0; i < 10; i++ {
		for on := 20; on < 100; on += 40 {
			flows = append(flows, TCPFlow{Start: time.Duration(on) * time.Second, Stop: time.Duration(on+20) * time.Second})
		}
	}
	return Scenario{
		Name: "tcp-on-off", Duration: 120 * time.Second, Seed: 14,
		Capacity: []Step{{0, 4_000_000}}, Queue: 100 * time.Millisecond,
		Sources: StageCamera(), TCP: flows,
	}
}

// ClientSimulcast is the web client's simulcast (web/src/protocol/encodings.ts:
// 100 kb/s, 500 kb/s and 1.5 Mb/s caps, which the test's high-entropy 720p
// fills) with libwebrtc's three-temporal-layer split.
func ClientSimulcast() []alloc.Layer {
	return []alloc.Layer{
		{Width: 320, Height: 180, Active: true, Bitrate: [3]int{40_000, 60_000, 100_000}},
		{Width: 640, Height: 360, Active: true, Bitrate: Rates360},
		{Width: 1280, Height: 720, Active: true, Bitrate: [3]int{600_000, 900_000, 1_500_000}},
	}
}

// TCPShare is the browser test's sequence (e2e TestAdaptationTCPShare) on its
// 4 Mb/s link with a 100 ms queue: one CUBIC flow from 20 s, ten from 80 s,
// all stopping at 100 s; ten started 10 s apart from 110 s, stopping at 210 s;
// then ten on for 20 s and off for 20 s, twice (from 220 s and 260 s). Its
// stage and a second source shown small send the web client's simulcast.
// TCPShareOffs are the times the flows stop.
func TCPShare() Scenario {
	var flows []TCPFlow
	flows = append(flows, TCPFlow{Start: 20 * time.Second, Stop: 100 * time.Second})
	for i := 1; i < 10; i++ {
		flows = append(flows, TCPFlow{Start: 80 * time.Second, Stop: 100 * time.Second})
	}
	for i := 0; i < 10; i++ {
		flows = append(flows, TCPFlow{Start: time.Duration(110+10*i) * time.Second, Stop: 210 * time.Second})
	}
	for _, on := range []int{220, 260} {
		for i := 0; i < 10; i++ {
			flows = append(flows, TCPFlow{Start: time.Duration(on) * time.Second, Stop: time.Duration(on+20) * time.Second})
		}
	}
	srcs := []alloc.Source{
		{ID: "stage", Priority: 0, Layers: ClientSimulcast(), Want: layers.Want{Width: 1280, Height: 720}},
		{ID: "other", Priority: 1, Layers: ClientSimulcast(), Want: layers.Want{Width: 320, Height: 180}},
	}
	return Scenario{
		Name: "tcp-share", Duration: 300 * time.Second, Seed: 16,
		Capacity: []Step{{0, 4_000_000}}, Queue: 100 * time.Millisecond,
		Sources: srcs, TCP: flows,
	}
}

// TCPShareOffs are the times TCPShare's flows stop: patterns (i), (ii) and
// the two cycles of (iii).
var TCPShareOffs = []time.Duration{100 * time.Second, 210 * time.Second, 240 * time.Second, 280 * time.Second}

// Alone4M is the competition scenarios' link with no competing flow.
func Alone4M() Scenario {
	return Scenario{
		Name: "alone-4m", Duration: 60 * time.Second, Seed: 15,
		Capacity: []Step{{0, 4_000_000}}, Queue: 100 * time.Millisecond,
		Sources: StageCamera(),
	}
}

// Standard lists the scenarios the documentation reports.
func Standard() []Scenario {
	return []Scenario{CapDrop(), Cap128(), SteadyCap(), RandomLoss(), BurstyLoss(), Jitter(), ProbeNoRoom(), Gallery(), REMBOnly()}
}
