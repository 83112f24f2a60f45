package forward

import (
	"sync/atomic"
	"time"

	"github.com/pion/webrtc/v4"
)

// TapPacket is one packet an UpTrack forwarded, as the tap sees it.
type TapPacket struct {
	Source    string
	Kind      webrtc.RTPCodecType
	RID       string
	SSRC      uint32
	Seq       uint16
	Timestamp uint32
	Marker    bool
	Arrival   time.Time
	Payload   []byte // a copy: the RTP payload (for VP8 with its payload descriptor)
}

// tap sees every packet at least one receiver took (forwarded, or meant to be). TEST ONLY: the
// blind-SFU browser test (e2e/e2ee_test.go) sets it to show that what the SFU
// forwards for an end-to-end encrypted sender does not decode. Unset (always,
// outside tests) it costs one atomic load per forwarded packet.
var tap atomic.Pointer[func(TapPacket)]

// SetTap installs f as the tap (nil removes it). TEST ONLY.
func SetTap(f func(TapPacket)) {
	if f == nil {
		tap.Store(nil)
		return
	}
	tap.Store(&f)
}

// tapped hands pkt to the tap, if any.
func (u *UpTrack) tapped(pkt *Packet) {
	f := tap.Load()
	if f == nil {
		return
	}
	(*f)(TapPacket{
		Source: u.p.Source, Kind: u.p.Kind, RID: u.p.RID, SSRC: pkt.Header.SSRC,
		Seq: pkt.Header.SequenceNumber, Timestamp: pkt.Header.Timestamp, Marker: pkt.Header.Marker,
		Arrival: pkt.Arrival,
		Payload: append([]byte(nil), pkt.Payload...),
	})
}
