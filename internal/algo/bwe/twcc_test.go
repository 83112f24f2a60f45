package bwe

import (
	"errors"
	"testing"
	"time"

	"github.com/pion/interceptor/pkg/twcc"
	"github.com/pion/rtcp"
)

func TestFromTransportCC(t *testing.T) {
	us := func(n int64) *rtcp.RecvDelta {
		typ := rtcp.TypeTCCPacketReceivedSmallDelta
		if n < 0 || n > 63750 {
			typ = rtcp.TypeTCCPacketReceivedLargeDelta
		}
		return &rtcp.RecvDelta{Type: typ, Delta: n}
	}
	ref := 10 * referenceUnit
	cases := []struct {
		name string
		p    rtcp.TransportLayerCC
		want []Packet
		err  bool
	}{
		{
			name: "run length of received packets",
			p: rtcp.TransportLayerCC{BaseSequenceNumber: 65534, PacketStatusCount: 3, ReferenceTime: 10,
				PacketChunks: []rtcp.PacketStatusChunk{&rtcp.RunLengthChunk{PacketStatusSymbol: rtcp.TypeTCCPacketReceivedSmallDelta, RunLength: 3}},
				RecvDeltas:   []*rtcp.RecvDelta{us(1000), us(250), us(0)}},
			want: []Packet{{ref + 1000*time.Microsecond, true}, {ref + 1250*time.Microsecond, true}, {ref + 1250*time.Microsecond, true}},
		},
		{
			name: "two-bit vector with a loss and a negative large delta",
			p: rtcp.TransportLayerCC{PacketStatusCount: 4, ReferenceTime: 10,
				PacketChunks: []rtcp.PacketStatusChunk{&rtcp.StatusVectorChunk{SymbolSize: rtcp.TypeTCCSymbolSizeTwoBit,
					SymbolList: []uint16{rtcp.TypeTCCPacketReceivedSmallDelta, rtcp.TypeTCCPacketNotReceived, rtcp.TypeTCCPacketReceivedLargeDelta, rtcp.TypeTCCPacketReceivedSmallDelta, 0, 0, 0}}},
				RecvDeltas: []*rtcp.RecvDelta{us(5000), us(-2000), us(750)}},
			want: []Packet{{ref + 5*time.Millisecond, true}, {}, {ref + 3*time.Millisecond, true}, {ref + 3750*time.Microsecond, true}},
		},
		{
			name: "one-bit vector, padding symbols past the count ignored",
			p: rtcp.TransportLayerCC{PacketStatusCount: 3, ReferenceTime: 10,
				PacketChunks: []rtcp.PacketStatusChunk{&rtcp.StatusVectorChunk{SymbolSize: rtcp.TypeTCCSymbolSizeOneBit,
					SymbolList: []uint16{1, 0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}}},
				RecvDeltas: []*rtcp.RecvDelta{us(0), us(500)}},
			want: []Packet{{ref, true}, {}, {ref + 500*time.Microsecond, true}},
		},
		{
			name: "chunks cover fewer packets than the count",
			p: rtcp.TransportLayerCC{PacketStatusCount: 5,
				PacketChunks: []rtcp.PacketStatusChunk{&rtcp.RunLengthChunk{PacketStatusSymbol: rtcp.TypeTCCPacketNotReceived, RunLength: 2}}},
			err: true,
		},
		{
			name: "fewer deltas than received packets",
			p: rtcp.TransportLayerCC{PacketStatusCount: 2,
				PacketChunks: []rtcp.PacketStatusChunk{&rtcp.RunLengthChunk{PacketStatusSymbol: rtcp.TypeTCCPacketReceivedSmallDelta, RunLength: 2}},
				RecvDeltas:   []*rtcp.RecvDelta{us(0)}},
			err: true,
		},
		{
			name: "more deltas than received packets",
			p: rtcp.TransportLayerCC{PacketStatusCount: 1,
				PacketChunks: []rtcp.PacketStatusChunk{&rtcp.RunLengthChunk{PacketStatusSymbol: rtcp.TypeTCCPacketReceivedSmallDelta, RunLength: 1}},
				RecvDeltas:   []*rtcp.RecvDelta{us(0), us(0)}},
			err: true,
		},
		{
			name: "reserved symbol",
			p: rtcp.TransportLayerCC{PacketStatusCount: 1,
				PacketChunks: []rtcp.PacketStatusChunk{&rtcp.RunLengthChunk{PacketStatusSymbol: rtcp.TypeTCCPacketReceivedWithoutDelta, RunLength: 1}}},
			err: true,
		},
		{
			name: "nil delta",
			p: rtcp.TransportLayerCC{PacketStatusCount: 1,
				PacketChunks: []rtcp.PacketStatusChunk{&rtcp.RunLengthChunk{PacketStatusSymbol: rtcp.TypeTCCPacketReceivedSmallDelta, RunLength: 1}},
				RecvDeltas:   []*rtcp.RecvDelta{nil}},
			err: true,
		},
	}
	for _, c := range cases {
		var fb Feedback
		err := FromTransportCC(&fb, &c.p)
		if c.err {
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("%s: err %v, want ErrMalformed", c.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if fb.BaseSeq != c.p.BaseSequenceNumber || len(fb.Packets) != len(c.want) {
			t.Errorf("%s: base %d, %d packets %+v, want %+v", c.name, fb.BaseSeq, len(fb.Packets), fb.Packets, c.want)
			continue
		}
		for i := range c.want {
			if fb.Packets[i] != c.want[i] {
				t.Errorf("%s: packet %d = %+v, want %+v", c.name, i, fb.Packets[i], c.want[i])
			}
		}
	}
}

// Round trip through pion's recorder, marshalling and parsing: the times and
// losses come back at TWCC's 250 µs resolution.
func TestFromTransportCCRecorder(t *testing.T) {
	rec := twcc.NewRecorder(1)
	arrivals := map[uint16]int64{}
	at := int64(5_000_000) // µs
	for seq := uint16(65530); seq != 20; seq++ {
		at += int64(seq%7) * 1000
		if seq%5 == 0 {
			continue // lost
		}
		arrivals[seq] = at
		rec.Record(2, seq, at)
	}
	var fb Feedback
	got := map[uint16]time.Duration{}
	lost := 0
	for _, pkt := range rec.BuildFeedbackPacket() {
		raw, err := pkt.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var cc rtcp.TransportLayerCC
		if err := cc.Unmarshal(raw); err != nil {
			t.Fatal(err)
		}
		if err := FromTransportCC(&fb, &cc); err != nil {
			t.Fatal(err)
		}
		for i, p := range fb.Packets {
			if p.Received {
				got[fb.BaseSeq+uint16(i)] = p.Arrival
			} else {
				lost++
			}
		}
	}
	if len(got) != len(arrivals) || lost == 0 {
		t.Fatalf("%d received, %d lost; want %d received", len(got), lost, len(arrivals))
	}
	// Differences between arrivals survive to within the 250 µs resolution.
	first := uint16(65531)
	for seq, a := range arrivals {
		want := time.Duration(a-arrivals[first]) * time.Microsecond
		diff := got[seq] - got[first] - want
		if diff < -250*time.Microsecond || diff > 250*time.Microsecond {
			t.Errorf("seq %d: arrival off by %v", seq, diff)
		}
	}
}

// FuzzFromTransportCC: feedback comes from untrusted receivers. Parsing and
// converting arbitrary bytes must not panic, and whatever converts must be
// safe to feed to the estimator.
func FuzzFromTransportCC(f *testing.F) {
	rec := twcc.NewRecorder(1)
	for i := 0; i < 40; i++ {
		if i%6 != 0 {
			rec.Record(2, uint16(65520+i), int64(1_000_000+i*1500-(i%3)*4000))
		}
	}
	for _, p := range rec.BuildFeedbackPacket() {
		raw, err := p.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add([]byte{0x8f, 0xcd, 0x00, 0x05, 0, 0, 0, 1, 0, 0, 0, 2, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, raw []byte) {
		var cc rtcp.TransportLayerCC
		if err := cc.Unmarshal(raw); err != nil {
			return
		}
		var fb Feedback
		if err := FromTransportCC(&fb, &cc); err != nil {
			return
		}
		if len(fb.Packets) != int(cc.PacketStatusCount) {
			t.Fatalf("%d packets for a count of %d", len(fb.Packets), cc.PacketStatusCount)
		}
		e := New(DefaultConfig())
		for i := 0; i < 100; i++ {
			e.OnSent(epoch.Add(time.Duration(i)*ms1), cc.BaseSequenceNumber+uint16(i), 1200, i%3 == 0)
		}
		e.OnFeedback(epoch.Add(200*ms1), fb)
		e.OnFeedback(epoch.Add(250*ms1), fb)
		if est := e.Estimate(); est < DefaultConfig().MinBitrate || est > DefaultConfig().MaxBitrate {
			t.Fatalf("estimate %d", est)
		}
	})
}
