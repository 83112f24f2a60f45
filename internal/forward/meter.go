package forward

import (
	"sync/atomic"
	"time"

	"github.com/podium-sfu/podium/internal/latency"
)

// latencySampleEvery is how many received packets pass between two whose
// receive→send latency is measured (to every destination). A power of two.
const latencySampleEvery = 16

// Meter counts what a whole server receives and forwards, for benchmarks: one is
// shared by every UpTrack (UpTrackParams.Meter; nil disables it). Updates are a
// few atomic adds per received packet, never a lock or an allocation.
type Meter struct {
	ReceivedPackets  atomic.Uint64 // RTP packets read from senders (before any drop)
	ReceivedBytes    atomic.Uint64 // their RTP bytes (header and payload, decrypted)
	ForwardedPackets atomic.Uint64 // packet × destination written to receivers
	ForwardedBytes   atomic.Uint64 // their RTP bytes as written (our 12-byte header + payload)
	// Latency holds, for one received packet in latencySampleEvery, the time from
	// the reader having the decrypted packet to each destination's write having
	// returned (SRTP protect and the send system call done).
	Latency latency.Histogram
}

// MeterSnapshot is a Meter's counters at one moment, as plain data.
type MeterSnapshot struct {
	ReceivedPackets  uint64           `json:"received_packets"`
	ReceivedBytes    uint64           `json:"received_bytes"`
	ForwardedPackets uint64           `json:"forwarded_packets"`
	ForwardedBytes   uint64           `json:"forwarded_bytes"`
	Latency          latency.Snapshot `json:"latency"`
}

// Snapshot reads the counters.
func (m *Meter) Snapshot() MeterSnapshot {
	return MeterSnapshot{
		ReceivedPackets:  m.ReceivedPackets.Load(),
		ReceivedBytes:    m.ReceivedBytes.Load(),
		ForwardedPackets: m.ForwardedPackets.Load(),
		ForwardedBytes:   m.ForwardedBytes.Load(),
		Latency:          m.Latency.Snapshot(),
	}
}

// rtpHeaderLen is the header DownTracks write: no CSRCs, no extensions.
const rtpHeaderLen = 12

// meterSampler decides which packets an UpTrack times; it belongs to the
// track's reader goroutine.
type meterSampler struct{ n uint32 }

func (s *meterSampler) next() bool {
	s.n++
	return s.n&(latencySampleEvery-1) == 0
}

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

func (m *Meter) sample(arrival time.Time) {
	m.Latency.Record(time.Since(arrival))
}
