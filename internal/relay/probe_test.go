package relay

import (
	"bytes"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/netem"
)

func TestParseProbe(t *testing.T) {
	reply := netip.MustParseAddrPort("10.0.0.2:7883")
	probe := AppendProbe(nil, 0x01020304, reply)
	with := func(b []byte, i int, v byte) []byte { b = bytes.Clone(b); b[i] = v; return b }
	v6 := AppendProbe(nil, 7, netip.MustParseAddrPort("[2001:db8::1]:9"))
	cases := []struct {
		name string
		b    []byte
		ok   bool
		want Probe
	}{
		{"probe", probe, true, Probe{Seq: 0x01020304, Reply: reply}},
		{"probe to IPv6", v6, true, Probe{Seq: 7, Reply: netip.MustParseAddrPort("[2001:db8::1]:9")}},
		{"echo", AppendEcho(nil, 0xfffffffe), true, Probe{Echo: true, Seq: 0xfffffffe}},
		{"empty", nil, false, Probe{}},
		{"unknown type", with(probe, 0, 3), false, Probe{}},
		{"probe one byte short", probe[:probeLen-1], false, Probe{}},
		{"probe one byte long", append(bytes.Clone(probe), 0), false, Probe{}},
		{"echo short", AppendEcho(nil, 1)[:echoLen-1], false, Probe{}},
		{"echo long", append(AppendEcho(nil, 1), 0), false, Probe{}},
		{"probe type, echo length", with(AppendEcho(nil, 1), 0, probeRequest), false, Probe{}},
		{"reply port 0", AppendProbe(nil, 1, netip.MustParseAddrPort("10.0.0.2:0")), false, Probe{}},
		{"reply to 0.0.0.0", AppendProbe(nil, 1, netip.MustParseAddrPort("0.0.0.0:7883")), false, Probe{}},
		{"reply to ::", AppendProbe(nil, 1, netip.MustParseAddrPort("[::]:7883")), false, Probe{}},
		{"reply to multicast", AppendProbe(nil, 1, netip.MustParseAddrPort("224.0.0.1:7883")), false, Probe{}},
	}
	for _, c := range cases {
		var p Probe
		err := ParseProbe(c.b, &p)
		if (err == nil) != c.ok || p != c.want {
			t.Errorf("%s: %+v, %v; want %+v (ok %v)", c.name, p, err, c.want, c.ok)
		}
	}
}

// FuzzParseProbe: a probe body from the network never panics the parser, and
// what it accepts is exactly what AppendProbe or AppendEcho writes (seeds in
// testdata/fuzz/FuzzParseProbe).
func FuzzParseProbe(f *testing.F) {
	f.Add(AppendProbe(nil, 1, netip.MustParseAddrPort("127.0.0.1:7883")))
	f.Add(AppendEcho(nil, 1))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Probe
		if ParseProbe(b, &p) != nil {
			return
		}
		again := AppendEcho(nil, p.Seq)
		if !p.Echo {
			again = AppendProbe(nil, p.Seq, p.Reply)
		}
		if !bytes.Equal(again, b) {
			t.Fatalf("accepted %x as %+v, which writes as %x", b, p, again)
		}
	})
}

func TestRTTTable(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	tb := newRTTTable()
	if _, ok := tb.rtt("b", t0); ok {
		t.Fatal("an RTT before any probe")
	}
	s1 := tb.sent("b", t0)
	if _, ok := tb.echoed("c", s1, t0.Add(ms(10))); ok {
		t.Fatal("c's echo of a probe sent to b counted")
	}
	if d, ok := tb.echoed("b", s1, t0.Add(ms(80))); !ok || d != ms(80) {
		t.Fatalf("first echo: %v %v", d, ok)
	}
	if _, ok := tb.echoed("b", s1, t0.Add(ms(90))); ok {
		t.Fatal("a second echo of one probe counted")
	}
	if r, _ := tb.rtt("b", t0.Add(ms(80))); r != ms(80) {
		t.Fatalf("after one sample %v, want 80ms", r)
	}
	// Smoothed: one 160 ms sample moves it an eighth of the way.
	s2 := tb.sent("b", t0.Add(time.Second))
	tb.echoed("b", s2, t0.Add(time.Second+ms(160)))
	if r, _ := tb.rtt("b", t0.Add(time.Second)); r != ms(90) {
		t.Fatalf("after 80 and 160 ms: %v, want 90ms", r)
	}
	// An echo arriving after probeSlots newer probes is too late to tell.
	old := tb.sent("b", t0.Add(2*time.Second))
	for range probeSlots {
		tb.sent("c", t0.Add(2*time.Second))
	}
	if _, ok := tb.echoed("b", old, t0.Add(3*time.Second)); ok {
		t.Fatal("an echo older than the slots counted")
	}
	// Without echoes the RTT goes stale.
	last := t0.Add(time.Second + ms(160))
	if _, ok := tb.rtt("b", last.Add(rttMaxAge)); !ok {
		t.Fatal("stale at rttMaxAge")
	}
	if _, ok := tb.rtt("b", last.Add(rttMaxAge+time.Millisecond)); ok {
		t.Fatal("still an RTT after rttMaxAge without an echo")
	}
	// A node no longer a target is forgotten.
	tb.keepOnly(map[string]netip.AddrPort{"c": {}})
	if _, ok := tb.rtt("b", last); ok {
		t.Fatal("b kept though no longer a target")
	}
}

// TestProbesOverNATS: two nodes that learnt each other's keys over NATS probe
// each other's relay; node b's relay sits behind an emulated path holding
// every datagram to it 40 ms, so both measure about 40 ms (a's probes wait
// on their way out, b's echoes on their way back). A probe body that does not
// parse is counted and not echoed.
func TestProbesOverNATS(t *testing.T) {
	ncs := natsConns(t, 2)
	a, b := startNode(t, ncs[0], "a"), startNode(t, ncs[1], "b")
	await(t, b, "keys", func() { _ = a.t.Send(time.Now(), b.t.Addr(), KindMedia, 1, []byte("keys")) })
	await(t, a, "keys", func() { _ = b.t.Send(time.Now(), a.t.Addr(), KindMedia, 1, []byte("keys")) })
	var leaked atomic.Int64
	for _, n := range []*node{a, b} {
		n.t.SetHandler(func(_ uint32, kind Kind, _ uint32, _ []byte) {
			if kind == KindProbe {
				leaked.Add(1)
			}
		})
	}
	path, err := netem.StartRelay(netem.RelayConfig{Listen: "127.0.0.1:0", Target: b.t.Addr().String(),
		Up: netem.Config{Delay: 40 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer path.Close()
	bAddr := path.Addr().AddrPort()
	pa := StartProbes(a.t, ProbeConfig{Every: 50 * time.Millisecond, Reply: a.t.Addr,
		Targets: func() map[string]netip.AddrPort { return map[string]netip.AddrPort{"b": bAddr} }})
	defer pa.Close()
	pb := StartProbes(b.t, ProbeConfig{Every: 50 * time.Millisecond, Reply: func() netip.AddrPort { return bAddr },
		Targets: func() map[string]netip.AddrPort { return map[string]netip.AddrPort{"a": a.t.Addr()} }})
	defer pb.Close()

	deadline := time.Now().Add(10 * time.Second)
	for pa.Stats().Samples.Load() < 10 || pb.Stats().Samples.Load() < 10 {
		if time.Now().After(deadline) {
			t.Fatalf("samples: a %d, b %d", pa.Stats().Samples.Load(), pb.Stats().Samples.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	for name, p := range map[string]struct {
		p    *Prober
		node string
	}{"a": {pa, "b"}, "b": {pb, "a"}} {
		rtt, ok := p.p.RTT(p.node, time.Now())
		if !ok || rtt < 40*time.Millisecond || rtt > 400*time.Millisecond {
			t.Errorf("%s measures %v to %s (%v), want 40 ms and a little", name, rtt, p.node, ok)
		}
		if all := p.p.RTTs(time.Now()); len(all) != 1 {
			t.Errorf("%s: RTTs %v", name, all)
		}
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("%d probe datagrams reached the media handler", n)
	}
	_ = a.t.Send(time.Now(), b.t.Addr(), KindProbe, 0, []byte{probeRequest, 1})
	for pb.Stats().Malformed.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a malformed probe body was not counted")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
