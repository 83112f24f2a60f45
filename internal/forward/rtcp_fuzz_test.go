package forward

import (
	"errors"
	"testing"

	"github.com/pion/rtcp"
)

// FuzzRTCPFeedback feeds untrusted RTCP through both places we read it, exactly as
// they read it: a receiver's feedback on a DownTrack (NACKs answered from the
// cache, keyframe requests passed on) and a sender's reports on an UpTrack. It
// must never panic; retransmissions never exceed the sequence numbers NACKed.
func FuzzRTCPFeedback(f *testing.F) {
	seed := func(pkts ...rtcp.Packet) {
		b, err := rtcp.Marshal(pkts)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	seed(nacks(1, 2, 3, 40000)...)
	seed(&rtcp.PictureLossIndication{SenderSSRC: 1, MediaSSRC: 2})
	seed(&rtcp.FullIntraRequest{SenderSSRC: 1, MediaSSRC: 2, FIR: []rtcp.FIREntry{{SSRC: 2, SequenceNumber: 1}}})
	seed(&rtcp.SenderReport{SSRC: srcVideoSSRC, NTPTime: 1 << 40, RTPTime: 90000, PacketCount: 10, OctetCount: 1000},
		&rtcp.SourceDescription{Chunks: []rtcp.SourceDescriptionChunk{{Source: srcVideoSSRC, Items: []rtcp.SourceDescriptionItem{{Type: rtcp.SDESCNAME, Text: "x"}}}}})
	seed(&rtcp.ReceiverReport{SSRC: 1, Reports: []rtcp.ReceptionReport{{SSRC: 2, FractionLost: 10, TotalLost: 5}}},
		&rtcp.TransportLayerNack{MediaSSRC: 2, Nacks: []rtcp.NackPair{{PacketID: 1, LostPackets: 0xffff}}})
	seed(&rtcp.ReceiverEstimatedMaximumBitrate{Bitrate: 1e6, SSRCs: []uint32{2}})
	f.Add([]byte{0x80, 0xc9, 0x00, 0x01, 0, 0, 0, 1}) // empty receiver report
	f.Add([]byte{0x81, 0xcd, 0xff, 0xff})             // NACK claiming a huge length
	f.Fuzz(func(t *testing.T, b []byte) {
		up, d, rec, _ := sentStream(t, videoContext(0xA, 0xB), 8)
		d.SetRTCPWriter(func([]rtcp.Packet) error { return nil })
		once := func() func([]byte) (int, error) {
			done := false
			return func(buf []byte) (int, error) {
				if done {
					return 0, errors.New("closed")
				}
				done = true
				return copy(buf, b), nil
			}
		}
		d.ReadFeedback(once())
		up.ReadFeedback(once())
		nacked, resent := up.Stats().NACKs.Load(), up.Stats().Retransmissions.Load()
		if resent > nacked || uint64(len(rec.packets())) != resent {
			t.Fatalf("%d NACKed, %d retransmissions counted, %d written", nacked, resent, len(rec.packets()))
		}
	})
}
