package forward

import (
	"sync/atomic"
	"time"

	"github.com/podium-sfu/podium/internal/latency"
	"github.com/podium-sfu/podium/internal/wire"
)

// Meter counts what a whole server receives and forwards, for benchmarks: one is
// shared by every UpTrack (UpTrackParams.Meter; nil disables it). Updates are a
// few atomic adds per received packet, never a lock or an allocation.
type Meter struct {
	ReceivedPackets  atomic.Uint64 // RTP packets read from senders (before any drop)
	ReceivedBytes    atomic.Uint64 // their RTP bytes (header and payload, decrypted)
	ForwardedPackets atomic.Uint64 // packet × destination written to receivers
	ForwardedBytes   atomic.Uint64 // their RTP bytes as written (our 12-byte header + payload)
	// Latency is the SFU-added latency of sampled packets (sequence numbers that
	// are multiples of latency.StampEvery): from the UDP socket read that brought
	// the packet in to each destination's write having returned (SRTP protect and
	// the send system call done). It needs Stamps filled by the socket reader
	// (peer.Config.Stamps); packets without a stamp are left out.
	Latency latency.Histogram
	// ForwardLatency is the part of it spent in the forwarding path: from the
	// reader having the decrypted packet (after pion's receive path) to the send.
	ForwardLatency latency.Histogram
	// Stamps are the socket read times of sampled packets.
	Stamps latency.Stamps
	// Wire counts the forwarding path's batched sends on the own data plane
	// (datagrams, GSO trains, system calls, refused).
	Wire wire.Counters
}

// MeterSnapshot is a Meter's counters at one moment, as plain data.
type MeterSnapshot struct {
	ReceivedPackets  uint64           `json:"received_packets"`
	ReceivedBytes    uint64           `json:"received_bytes"`
	ForwardedPackets uint64           `json:"forwarded_packets"`
	ForwardedBytes   uint64           `json:"forwarded_bytes"`
	Latency          latency.Snapshot `json:"latency"`
	ForwardLatency   latency.Snapshot `json:"forward_latency"`
	// The own data plane's sends: datagrams, the messages that carried them
	// (a datagram or a GSO train) and the system calls.
	WireDatagrams uint64 `json:"wire_datagrams"`
	WireMessages  uint64 `json:"wire_messages"`
	WireCalls     uint64 `json:"wire_calls"`
}

// Snapshot reads the counters.
func (m *Meter) Snapshot() MeterSnapshot {
	return MeterSnapshot{
		ReceivedPackets:  m.ReceivedPackets.Load(),
		ReceivedBytes:    m.ReceivedBytes.Load(),
		ForwardedPackets: m.ForwardedPackets.Load(),
		ForwardedBytes:   m.ForwardedBytes.Load(),
		Latency:          m.Latency.Snapshot(),
		ForwardLatency:   m.ForwardLatency.Snapshot(),
		WireDatagrams:    m.Wire.Datagrams.Load(),
		WireMessages:     m.Wire.Messages.Load(),
		WireCalls:        m.Wire.Calls.Load(),
	}
}

// rtpHeaderLen is the header DownTracks write: no CSRCs, no extensions.
const rtpHeaderLen = 12

func (m *Meter) received(bytes int) {
	m.ReceivedPackets.Add(1)
	m.ReceivedBytes.Add(uint64(bytes))
}

func (m *Meter) forwarded(packets, payloadBytes int) {
	if packets == 0 {
		return
	}
	m.ForwardedPackets.Add(uint64(packets))
	m.ForwardedBytes.Add(uint64(packets * (rtpHeaderLen + payloadBytes)))
}

// sampleStart returns, for a sampled packet, when it came off the socket (zero
// if unknown); ok is false for packets not sampled.
func (m *Meter) sampleStart(ssrc uint32, seq uint16) (wire time.Time, ok bool) {
	if !latency.Sampled(seq) {
		return time.Time{}, false
	}
	wire, _ = m.Stamps.Arrival(ssrc, seq)
	return wire, true
}

// Sent records one destination's send of a sampled packet (wire.Sampler).
func (m *Meter) Sent(wire, read, sent time.Time) {
	m.ForwardLatency.Record(sent.Sub(read))
	if !wire.IsZero() {
		m.Latency.Record(sent.Sub(wire))
	}
}
