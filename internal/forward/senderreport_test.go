package forward

import (
	"errors"
	"testing"

	"github.com/pion/rtcp"
	"github.com/pion/webrtc/v4"
)

// sentBy marshals a compound RTCP packet as a publisher sends it.
func sentBy(t testing.TB, pkts ...rtcp.Packet) []byte {
	t.Helper()
	b, err := rtcp.Marshal(pkts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// viaPionSR is what the server read before: pion's decoder, then the first
// sender report of ssrc.
func viaPionSR(b []byte, ssrc uint32) (uint64, uint32, bool) {
	pkts, err := rtcp.Unmarshal(b)
	if err != nil {
		return 0, 0, false
	}
	for _, p := range pkts {
		if sr, ok := p.(*rtcp.SenderReport); ok && sr.SSRC == ssrc {
			return sr.NTPTime, sr.RTPTime, true
		}
	}
	return 0, 0, false
}

func TestSenderReportReadInPlace(t *testing.T) {
	sr := &rtcp.SenderReport{SSRC: 7, NTPTime: 0x1122334455667788, RTPTime: 0x99aabbcc, PacketCount: 3, OctetCount: 4,
		Reports: []rtcp.ReceptionReport{{SSRC: 9}}}
	other := &rtcp.SenderReport{SSRC: 8, NTPTime: 1, RTPTime: 2}
	sdes := &rtcp.SourceDescription{Chunks: []rtcp.SourceDescriptionChunk{{Source: 7, Items: []rtcp.SourceDescriptionItem{{Type: rtcp.SDESCNAME, Text: "x"}}}}}
	truncated := sentBy(t, sr)
	truncated[2], truncated[3] = 0, 6 // 28 bytes: no room for its reception report
	for name, b := range map[string][]byte{
		"alone":             sentBy(t, sr),
		"with SDES":         sentBy(t, sr, sdes),
		"after another":     sentBy(t, other, sr),
		"another only":      sentBy(t, other, sdes),
		"a PLI":             sentBy(t, &rtcp.PictureLossIndication{MediaSSRC: 7}),
		"count over length": truncated[:28],
		"cut short":         sentBy(t, sr, sdes)[:60],
		"not version 2":     append([]byte{0x40}, sentBy(t, sr)[1:]...),
	} {
		ntp, ts, ok := senderReport(b, 7)
		wantNTP, wantTS, wantOK := viaPionSR(b, 7)
		if ntp != wantNTP || ts != wantTS || ok != wantOK {
			t.Errorf("%s: read %x %x %v, pion %x %x %v", name, ntp, ts, ok, wantNTP, wantTS, wantOK)
		}
	}
}

// A publisher's sender reports are read without a heap allocation (pion's
// decoder allocated for each compound packet).
func TestSenderReportsReadWithoutAllocating(t *testing.T) {
	up := NewUpTrack(UpTrackParams{Source: "p", Kind: webrtc.RTPCodecTypeVideo, SSRC: srcVideoSSRC, Codec: vp8Codec})
	b := sentBy(t, &rtcp.SenderReport{SSRC: srcVideoSSRC, NTPTime: 5, RTPTime: 6},
		&rtcp.SourceDescription{Chunks: []rtcp.SourceDescriptionChunk{{Source: srcVideoSSRC, Items: []rtcp.SourceDescriptionItem{{Type: rtcp.SDESCNAME, Text: "x"}}}}})
	errDone := errors.New("done")
	const reports = 100
	n := 0
	read := func(dst []byte) (int, error) {
		if n == reports {
			return 0, errDone
		}
		n++
		return copy(dst, b), nil
	}
	// One: ReadFeedback's buffer, for the hundred reports.
	allocs := testing.AllocsPerRun(10, func() { n = 0; up.ReadFeedback(read) })
	if allocs > 1 {
		t.Errorf("%v allocations per %d sender reports, want 1 (the buffer)", allocs, reports)
	}
	if sr, ok := up.LastSenderReport(); !ok || sr.NTPTime != 5 || sr.RTPTime != 6 {
		t.Errorf("last sender report %+v %v", sr, ok)
	}
}

// FuzzSenderReport: on any bytes, a sender report pion's decoder finds is read
// in place alike, and nothing panics. (The converse need not hold: pion rejects
// a whole compound for a malformed packet of a kind we do not read.)
func FuzzSenderReport(f *testing.F) {
	sr := &rtcp.SenderReport{SSRC: 7, NTPTime: 0x1122334455667788, RTPTime: 0x99aabbcc, Reports: []rtcp.ReceptionReport{{SSRC: 9}}}
	f.Add(sentBy(f, sr))
	f.Add(sentBy(f, &rtcp.SenderReport{SSRC: 8}, sr))
	f.Add(sentBy(f, sr, &rtcp.SourceDescription{Chunks: []rtcp.SourceDescriptionChunk{{Source: 7, Items: []rtcp.SourceDescriptionItem{{Type: rtcp.SDESCNAME, Text: "x"}}}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		ntp, ts, ok := senderReport(b, 7)
		if wantNTP, wantTS, wantOK := viaPionSR(b, 7); wantOK && (!ok || ntp != wantNTP || ts != wantTS) {
			t.Fatalf("read %x %x %v, pion %x %x", ntp, ts, ok, wantNTP, wantTS)
		}
	})
}

// Relaying a sender report allocates nothing of ours (the report and its
// slice were the top of meeting-8's heap profile); the writer gets it
// translated every time.
func TestSenderReportRelayedWithoutAllocating(t *testing.T) {
	up := newVideoUp(t, nil)
	d := bindDown(t, up, "r", videoContext(0xA, 0xB).withWriter(&recorder{}))
	var got rtcp.SenderReport
	writes := 0
	d.SetRTCPWriter(func(p []rtcp.Packet) error {
		got = *p[0].(*rtcp.SenderReport) // copied: writers marshal before they return
		writes++
		return nil
	})
	feed(t, up, rtpPacket(t, srcVideoSSRC, srcVideoPT, 100, 9000, true, vp8Key), t0)
	ntp := uint64(0x1122334455667788)
	allocs := testing.AllocsPerRun(100, func() {
		ntp++
		d.relaySenderReport(SenderReport{NTPTime: ntp, RTPTime: 9090}, 0, nil)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per relayed sender report, want 0", allocs)
	}
	if writes < 100 || got.SSRC != 0xA || got.NTPTime != ntp {
		t.Errorf("%d writes, last %+v", writes, got)
	}
}
