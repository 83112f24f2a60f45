package forward

import (
	"encoding/binary"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/pion/rtcp"
	"github.com/pion/rtp"

	"github.com/podium-sfu/podium/internal/algo/bwe"
	"github.com/podium-sfu/podium/internal/algo/playout"
	"github.com/podium-sfu/podium/internal/gridclock"
	"github.com/podium-sfu/podium/internal/wire"
)

const (
	// retransmitShare of the estimate is what NACK answers may take: after a
	// capacity drop, answering every NACK floods the link with the backlog and
	// the loss feeds itself.
	retransmitShare = 0.2
	// crowdedRetransmitShare is the most NACK answers may take on a crowded
	// path (bwe.Crowded) in competitive mode, where the share is twice the
	// loss: at 150 kb/s and 15-30 % loss the lowest layer's repairs alone need
	// more than 0.2, half of the answers were refused and the SFU gave up a
	// segment a second (TCP-share run W). The flows filling that queue do not
	// back off for our retransmissions, nor would they leave us the room we
	// leave. Not behind a cap we fill alone (competitive mode never starts
	// below 300 kb/s): there more answers only lengthen our own queue.
	crowdedRetransmitShare = 0.5
	// retransmitBurst is the retransmission budget that can build up, in time at
	// that share: enough for a lost frame, not for a backlog.
	retransmitBurst = 250 * time.Millisecond
	// minRetransmitBurst lets a few packets through even at a tiny estimate.
	minRetransmitBurst = 3 * 1200
	// retransmitMinAge and retransmitRTTs size the retransmission window by RTT:
	// a packet first sent longer ago than max(min, RTTs × RTT) would arrive too
	// late to be played.
	retransmitMinAge = 300 * time.Millisecond
	retransmitRTTs   = 4

	// probeTick is the pacing step while a probe cluster runs; idleTick the
	// check for timeouts and new clusters otherwise.
	probeTick = 5 * time.Millisecond
	idleTick  = 50 * time.Millisecond
	// maxProbeDebt bounds the padding owed when no video could carry it (no
	// frame boundary yet): probes are sent at their rate, not caught up in bursts.
	maxProbeDebt = 4 * probeTick
	// lateStepMax bounds the gap a late pacer step pays for (probeOwed).
	lateStepMax = 20 * probeTick
	// probeBatch is the probe packets sent in one system call.
	probeBatch = 16
)

// Link is one receiver's subscribe connection as congestion control sees it:
// the transport-wide sequence shared by all its DownTracks, the send-side
// bandwidth estimator fed by what they send and by the receiver's feedback, the
// retransmission budget, and the probe pacer (Run).
type Link struct {
	// mu is a leaf lock, taken inside DownTrack.mu and held across the write to
	// pion, so that transport-wide sequence order is send order.
	mu        sync.Mutex
	extID     uint8  // negotiated transport-cc header extension id (0: none)
	seq       uint16 // last transport-wide sequence number sent
	est       *bwe.Estimator
	clock     func() time.Time // read at each write through pion: when the packet is handed to the socket
	asked     atomic.Uint32    // playout delay asked of the receiver: playoutAsked | the extension's 3 bytes; 0: never asked (read at each write, with the fields above)
	fb        bwe.Feedback     // reused between reports
	rtxTokens float64          // bytes of retransmission allowed now
	rtxAt     time.Time
	probeDebt float64 // bytes of probe padding owed
	probing   bool    // the last pacer step sent a probe cluster's padding
	probeAt   time.Time
	stepPanic chan any // a pacer step's panic, for Run to raise (pacerSteps)

	estimate  atomic.Int64        // bits/s, readable without mu
	delivered atomic.Int64        // media bits/s the receiver acknowledged lately
	desired   atomic.Int64        // what the allocator would send with no limit, bits/s
	wanted    atomic.Int64        // what the shown videos would take with no limit, bits/s
	rtt       atomic.Int64        // ICE round trip, nanoseconds; 0: unknown
	fbRTT     atomic.Int64        // round trip from transport-wide feedback, nanoseconds; 0: unknown
	queue     atomic.Int64        // queueing delay on the path now, nanoseconds (bwe.Estimator.QueueDelay)
	loss      atomic.Uint64       // math.Float64bits of bwe.Estimator.LossFraction
	competing atomic.Bool         // bwe.Estimator.Competing
	playout   *playout.Controller // Run's
	pathRTT   playout.PathRTT     // Run's: the round trip the playout delay is asked from
	downs     atomic.Pointer[[]*DownTrack]
	stats     linkCounters
	out       *wire.Batch // Run's: probe padding

	// tracks: the connection's bound DownTracks by SSRC, for RTCP taken at the
	// socket (HandleRTCP); copied on write under tracksMu.
	tracks   atomic.Pointer[map[uint32]*DownTrack]
	tracksMu sync.Mutex
}

type linkCounters struct {
	feedbacks, malformed     atomic.Uint64
	probePackets, probeBytes atomic.Uint64
	retransmits, overBudget  atomic.Uint64
	skipped, resyncs         atomic.Uint64
	resyncsHeld              atomic.Uint64
}

// LinkStats are a Link's counters and estimator state, for stats and metrics.
type LinkStats struct {
	Estimator          bwe.Stats
	Feedbacks          uint64 // transport-wide feedback reports taken
	MalformedFeedback  uint64
	ProbePackets       uint64 // padding sent for probes
	ProbeBytes         uint64
	Retransmits        uint64        // NACK answers sent
	RetransmitsDropped uint64        // NACK answers not sent: over the retransmission budget
	RetransmitsSkipped uint64        // NACKs not answered: packet not cached, older than the window, or resent less than an RTT ago
	Resyncs            uint64        // segments given up for a base-layer loss that could not be repaired, a keyframe asked for
	ResyncsHeld        uint64        // such losses not given up: within their segment's hold (resyncHoldFor), the link not competing
	PlayoutDelay       time.Duration // least playout delay asked of the receiver's video (0: none)
	ProbeTarget        int           // what the prober climbs toward (SetDesired), bits/s; 0: nothing held back
}

// NewLink returns a link whose estimator starts from cfg.
func NewLink(cfg bwe.Config) *Link {
	pcfg := playout.DefaultConfig()
	l := &Link{est: bwe.New(cfg), clock: time.Now, out: wire.NewBatch(probeBatch),
		playout: playout.New(pcfg), pathRTT: playout.NewPathRTT(pcfg.PathWindow), stepPanic: make(chan any, 1)}
	l.publishLocked()
	l.downs.Store(&[]*DownTrack{})
	return l
}

// publishLocked copies what others read without mu out of the estimator,
// after anything that may have changed it.
func (l *Link) publishLocked() {
	l.estimate.Store(int64(l.est.Estimate()))
	l.delivered.Store(int64(l.est.Delivered()))
	l.fbRTT.Store(int64(l.est.RTT()))
	l.queue.Store(int64(l.est.QueueDelay()))
	l.loss.Store(math.Float64bits(l.est.LossFraction()))
	l.competing.Store(l.est.Competing())
}

// Competing reports that the estimator holds its share beside flows that do
// not back off (bwe.Estimator.Competing): their losses hit this receiver's
// media too.
func (l *Link) Competing() bool { return l.competing.Load() }

// Path is what the estimator sees of the path now: the share of our packets
// the last loss window lost, and the queueing delay.
func (l *Link) Path() (loss float64, queue time.Duration) {
	return math.Float64frombits(l.loss.Load()), time.Duration(l.queue.Load())
}

// Estimate is the current send-side bandwidth estimate in bits per second.
func (l *Link) Estimate() int { return int(l.estimate.Load()) }

// Delivered is the media the receiver acknowledged over the last half second,
// in bits per second: a rate the path demonstrably carries.
func (l *Link) Delivered() int { return int(l.delivered.Load()) }

// SetDesired tells the prober what the receiver's videos would take with no
// bandwidth limit: probes run only while that is above the estimate.
func (l *Link) SetDesired(bps int) { l.desired.Store(int64(bps)) }

// SetWanted tells the estimator what the receiver's videos, at the sizes it
// shows them, would take with no bandwidth limit (0: none is held back).
func (l *Link) SetWanted(bps int) { l.wanted.Store(int64(bps)) }

// SetRTT records the connection's round-trip time (from ICE).
func (l *Link) SetRTT(d time.Duration) { l.rtt.Store(int64(d)) }

// Stats reads the link's counters and estimator state.
func (l *Link) Stats() LinkStats {
	l.mu.Lock()
	est := l.est.Stats()
	l.mu.Unlock()
	c := &l.stats
	return LinkStats{
		Estimator: est, Feedbacks: c.feedbacks.Load(), MalformedFeedback: c.malformed.Load(),
		ProbePackets: c.probePackets.Load(), ProbeBytes: c.probeBytes.Load(),
		Retransmits: c.retransmits.Load(), RetransmitsDropped: c.overBudget.Load(), RetransmitsSkipped: c.skipped.Load(),
		Resyncs: c.resyncs.Load(), ResyncsHeld: c.resyncsHeld.Load(), PlayoutDelay: l.playoutLeast(),
		ProbeTarget: int(l.desired.Load()),
	}
}

// setExtension records the negotiated transport-cc extension id; every packet
// sent on the connection carries it from then on.
func (l *Link) setExtension(id uint8) {
	l.mu.Lock()
	l.extID = id
	l.mu.Unlock()
}

// addDown and removeDown keep the video DownTracks that can carry probe padding.
func (l *Link) addDown(d *DownTrack) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := *l.downs.Load()
	next := append(append(make([]*DownTrack, 0, len(old)+1), old...), d)
	l.downs.Store(&next)
}

func (l *Link) removeDown(d *DownTrack) {
	l.mu.Lock()
	defer l.mu.Unlock()
	old := *l.downs.Load()
	next := make([]*DownTrack, 0, len(old))
	for _, x := range old {
		if x != d {
			next = append(next, x)
		}
	}
	l.downs.Store(&next)
}

// stampLocked gives h the next transport-wide sequence number, written into
// ext, and records the send with the estimator; ok says that it had a number
// to stamp. ext belongs to the DownTrack: h keeps pointing at it after mu is
// released, while other DownTracks of this receiver stamp theirs.
// The send time is when the packet is handed to the socket, not its arrival:
// the estimator reads delay growth between sends and their feedback as a
// queue on the path, and time spent inside the SFU (fan-out to other
// receivers, a batch filling) is no queue on this receiver's path. queued: the
// packet goes into a batch, which tells its send time once flushed
// (Departed), and no clock is read here (one read per packet and destination
// showed in profiles); else the caller holds mu and writes it at once, and
// the clock is read now.
func (l *Link) stampLocked(h *rtp.Header, ext *[2]byte, payload int, probe, queued bool) (seq uint16, ok bool) {
	if l.extID == 0 {
		return 0, false
	}
	l.seq++
	binary.BigEndian.PutUint16(ext[:], l.seq)
	if h.SetExtension(l.extID, ext[:]) != nil {
		return 0, false
	}
	size := h.MarshalSize() + payload + int(h.PaddingSize)
	if queued {
		l.est.OnQueued(l.seq, size, probe)
	} else {
		l.est.OnSent(l.clock(), l.seq, size, probe)
	}
	return l.seq, true
}

// Departed is a batch's word that packet seq was handed to the socket at at
// (wire.Departure): its send time for the estimator.
func (l *Link) Departed(seq uint16, at time.Time) {
	l.mu.Lock()
	l.est.Departed(at, seq)
	l.mu.Unlock()
}

// playoutAsked marks Link.asked as holding a delay.
const playoutAsked = 1 << 31

// askPlayout decides the playout delay asked of the receiver from its path's
// round trip and the repairs it needed (algo/playout); once one was asked,
// every video packet carries the extension, 0 included, since the receiver
// keeps the last it saw.
//
// The round trip is the least of the last 10 s (playout.PathRTT), without
// the queue the retransmission window adds: behind a 128 kb/s cap both round
// trips are mostly the bottleneck's standing queue, and the 500–600 ms asked
// from them went with longer freezes than asking nothing (docs/adaptation.md).
// A queue that drains within the window is left out; the cap's did not drain
// (450 ms still asked there). A path 300 ms long each way still asks.
func (l *Link) askPlayout(now time.Time) {
	l.pathRTT.Observe(now, l.roundTrip())
	least := l.playout.Update(now, l.pathRTT.Least(now), l.stats.retransmits.Load())
	if least == 0 && l.asked.Load() == 0 {
		return
	}
	ext := playout.Extension(least)
	l.asked.Store(playoutAsked | uint32(ext[0])<<16 | uint32(ext[1])<<8 | uint32(ext[2]))
}

// playoutDelay is the playout-delay extension every video packet to the
// receiver carries, if one was asked.
func (l *Link) playoutDelay() ([3]byte, bool) {
	v := l.asked.Load()
	return [3]byte{byte(v >> 16), byte(v >> 8), byte(v)}, v != 0
}

// playoutLeast is the least delay asked now (0: none).
func (l *Link) playoutLeast() time.Duration {
	ext, _ := l.playoutDelay()
	return playout.Least(ext)
}

// handleRTCP takes the congestion control feedback among a receiver's RTCP.
func (l *Link) handleRTCP(now time.Time, p rtcp.Packet) {
	switch p := p.(type) {
	case *rtcp.TransportLayerCC:
		l.mu.Lock()
		if err := bwe.FromTransportCC(&l.fb, p); err != nil {
			l.mu.Unlock()
			l.stats.malformed.Add(1)
			return
		}
		l.est.OnFeedback(now, l.fb)
		l.publishLocked()
		l.mu.Unlock()
		l.stats.feedbacks.Add(1)
	case *rtcp.ReceiverEstimatedMaximumBitrate:
		l.mu.Lock()
		l.est.OnREMB(now, int(min(p.Bitrate, float32(1<<31-1))))
		l.publishLocked()
		l.mu.Unlock()
	}
}

// bindSSRC and unbindSSRC keep tracks.
func (l *Link) bindSSRC(ssrc uint32, d *DownTrack) {
	l.tracksMu.Lock()
	defer l.tracksMu.Unlock()
	next := map[uint32]*DownTrack{}
	if cur := l.tracks.Load(); cur != nil {
		for k, v := range *cur {
			next[k] = v
		}
	}
	next[ssrc] = d
	l.tracks.Store(&next)
}

func (l *Link) unbindSSRC(d *DownTrack) {
	l.tracksMu.Lock()
	defer l.tracksMu.Unlock()
	cur := l.tracks.Load()
	if cur == nil {
		return
	}
	next := make(map[uint32]*DownTrack, len(*cur))
	for k, v := range *cur {
		if v != d {
			next[k] = v
		}
	}
	l.tracks.Store(&next)
}

func (l *Link) track(ssrc uint32) *DownTrack {
	if m := l.tracks.Load(); m != nil {
		return (*m)[ssrc]
	}
	return nil
}

// HandleRTCP takes one compound RTCP packet of the receiver connection, taken
// (authenticated and decrypted) at the socket: transport-wide feedback is
// decoded in place, receiver reports and descriptions are skipped (nothing
// reads them), NACKs and keyframe requests go to the DownTrack they name,
// answers into out (the socket reader's batch, which it flushes).
func (l *Link) HandleRTCP(now time.Time, b []byte, out *wire.Batch) {
	for len(b) >= 4 {
		size := 4 * (int(binary.BigEndian.Uint16(b[2:])) + 1)
		if size > len(b) {
			return
		}
		p := b[:size]
		b = b[size:]
		switch {
		case isTransportCC(p):
			l.handleTransportCC(now, p)
			continue
		case p[1] >= 200 && p[1] <= 203: // SR, RR, SDES, BYE
			continue
		}
		pkts, err := rtcp.Unmarshal(p)
		if err != nil {
			continue
		}
		for _, pkt := range pkts {
			if remb, ok := pkt.(*rtcp.ReceiverEstimatedMaximumBitrate); ok {
				if l.namesTrack(remb.SSRCs) {
					l.handleRTCP(now, remb)
				}
				continue
			}
			for _, ssrc := range pkt.DestinationSSRC() {
				if d := l.track(ssrc); d != nil {
					d.handleRTCP(now, []rtcp.Packet{pkt}, out)
					break
				}
			}
		}
	}
}

// namesTrack reports whether ssrcs name one of the connection's media
// streams. A REMB that names none is ignored, as on pion's path (which hands
// RTCP only to the senders it names): Chrome also sends REMB from its
// receive-side estimator for the packets that carry no transport-wide number,
// which are our RTX answers alone, and that estimate of the retransmission
// stream's rate (tens of kb/s under loss) capped the link's estimate when
// the receivers' RTCP was first taken at the socket (TestAdaptationFivePercentLoss).
func (l *Link) namesTrack(ssrcs []uint32) bool {
	for _, ssrc := range ssrcs {
		if l.track(ssrc) != nil {
			return true
		}
	}
	return false
}

// handleTransportCC takes one transport-wide feedback packet, still encoded.
func (l *Link) handleTransportCC(now time.Time, b []byte) {
	l.mu.Lock()
	if err := parseTransportCC(b, &l.fb); err != nil {
		l.mu.Unlock()
		l.stats.malformed.Add(1)
		return
	}
	l.est.OnFeedback(now, l.fb)
	l.publishLocked()
	l.mu.Unlock()
	l.stats.feedbacks.Add(1)
}

// retransmitWindow is how old a packet may be and still be resent, and how
// soon after its last send a NACK for it is ignored (one RTT: the receiver
// cannot have seen that copy yet).
//
// Both count the queue the path holds now on top of the round trip: behind a
// full queue a receiver reports a loss, and sees a retransmission, that much
// later. Without it, at a 128 kb/s cap (a 6 KB tbf queue: up to 380 ms), a
// round trip of 20–60 ms left a 300 ms window: NACKs for packets lost in the
// queue came too late, were skipped (161–535 per run), and the video froze
// until a keyframe (3.2 s in CI).
//
// The lower of two round trips is used: ICE's reads a consent check that was
// lost and retried as a round trip of its retransmission timeout, and on a
// lossy link that suppressed the receiver's legitimate repeated NACKs for
// seconds (5 % loss: 23 instead of 28 fps); the feedback one reads a little
// high by the receiver's feedback interval, never that far off.
func (l *Link) retransmitWindow() (rtt, maxAge time.Duration) {
	rtt = l.roundTrip() + time.Duration(l.queue.Load())
	return rtt, max(retransmitMinAge, retransmitRTTs*rtt)
}

// roundTrip is the lower of the ICE and the feedback round trips (0: neither
// known yet), queue included as far as the samples carry it.
func (l *Link) roundTrip() time.Duration {
	rtt := time.Duration(l.rtt.Load())
	if fb := time.Duration(l.fbRTT.Load()); fb > 0 && (rtt == 0 || fb < rtt) {
		rtt = fb
	}
	return rtt
}

// allowRetransmitLocked spends bytes of the retransmission budget, refilled
// at retransmitShare of the estimate (more on a crowded path,
// crowdedRetransmitShare). A packet the receiver needs to decode
// on (sentLog.needed) goes first: the others leave half the burst to it, and
// it may overdraw by one burst, since one packet costs less than the keyframe
// the receiver needs without it. At a 128 kb/s cap the burst is three packets
// and the refill two a second: losses of the enhancement layers and of the
// encoding switched away from could spend it while a base-layer loss, which
// stops the picture until a keyframe, waited (CI froze 3.2 s and 6 s).
func (l *Link) allowRetransmitLocked(now time.Time, bytes int, needed bool) bool {
	share := retransmitShareOf(l.est.Competing(), l.est.LossFraction(), l.est.QueueDelay())
	rate := share * float64(l.est.Estimate()) / 8 // bytes per second
	burst := max(rate*retransmitBurst.Seconds(), minRetransmitBurst)
	if l.rtxAt.IsZero() {
		l.rtxTokens = burst
	} else if dt := now.Sub(l.rtxAt); dt > 0 {
		l.rtxTokens = min(burst, l.rtxTokens+rate*dt.Seconds())
	}
	l.rtxAt = now
	floor := burst / 2
	if needed {
		floor = -burst
	}
	if l.rtxTokens-float64(bytes) < floor {
		l.stats.overBudget.Add(1)
		return false
	}
	l.rtxTokens -= float64(bytes)
	return true
}

// retransmitShareOf is the share of the estimate NACK answers may take:
// retransmitShare, or twice the loss up to crowdedRetransmitShare on a
// crowded path in competitive mode.
func retransmitShareOf(competing bool, loss float64, queue time.Duration) float64 {
	if !competing || !bwe.Crowded(loss, queue) {
		return retransmitShare
	}
	return min(max(retransmitShare, 2*loss), crowdedRetransmitShare)
}

// Run paces probe padding and drives the estimator's timeouts until done is
// closed: the shared clock (gridclock.Shared) runs its steps meanwhile.
func (l *Link) Run(done <-chan struct{}) {
	steps := (*pacerSteps)(l)
	gridclock.Shared.Add(steps, gridclock.OnGrid(time.Now(), idleTick))
	select {
	case <-done:
		gridclock.Shared.Remove(steps)
	case r := <-l.stepPanic:
		gridclock.Shared.Remove(steps)
		panic(r) // where a panic of the connection's own goroutine would be
	}
}

// probeOwed is the padding (bytes) a pacer step sends at rate (bits/s):
// what the steps before it left unsent plus the time since the last step,
// within bounds. A cluster's first step owes at most maxProbeDebt (the idle
// step before it was up to idleTick ago). A later step the scheduler ran
// late owes the whole gap, up to lateStepMax: on a busy 2-core box the
// 5 ms steps came 26-84 ms apart, and paid at the rate only, clusters sent
// 73-93 % of their target, proved too little and failed, and the estimate
// stayed below the top layer a staged video needed (Firefox e2e). Padding
// that no frame boundary could carry stays bounded by maxProbeDebt, or
// whatever the gap was.
func probeOwed(unsent float64, rate int, elapsed time.Duration, probing bool) float64 {
	limit := maxProbeDebt
	elapsed = max(elapsed, 0)
	if probing {
		limit = max(limit, min(elapsed, lateStepMax))
	}
	elapsed = min(elapsed, limit)
	perSecond := float64(rate) / 8
	return min(unsent+perSecond*elapsed.Seconds(), perSecond*limit.Seconds())
}

// tick is one pacer step; it returns when the next is due.
func (l *Link) tick(now time.Time) time.Duration {
	l.askPlayout(now)
	l.mu.Lock()
	if to := l.est.NextTimeout(); !to.IsZero() && !now.Before(to) {
		l.est.HandleTimeout(now)
	}
	l.est.SetWanted(int(l.wanted.Load()))
	rate, ok := l.est.ProbeWanted(now, int(l.desired.Load()))
	l.publishLocked()
	if !ok {
		l.probeDebt, l.probeAt, l.probing = 0, now, false
		l.mu.Unlock()
		return idleTick
	}
	debt := probeOwed(l.probeDebt, rate, now.Sub(l.probeAt), l.probing)
	l.probeAt, l.probing = now, true
	l.mu.Unlock()

	// Padding is written by the DownTracks, which lock themselves before mu,
	// into l.out, sent once they have unlocked.
	for _, d := range *l.downs.Load() {
		if debt <= 0 {
			break
		}
		debt -= float64(d.pad(now, int(debt), l.out))
		if l.out.Free() == 0 {
			l.out.Flush()
		}
	}
	if l.out.Len() > 0 {
		l.out.Flush()
	}
	l.mu.Lock()
	l.probeDebt = debt
	l.mu.Unlock()
	return probeTick
}
