package session

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/pion/rtcp"

	"github.com/podium-sfu/podium/internal/forward"
	"github.com/podium-sfu/podium/internal/wire"
)

// received is the publish connection's receive side when the data plane
// reads the publishers' packets at the socket (peer.Engine.OwnsReceive):
// pion's NACK generator and receiver-report interceptor are not registered
// then (they would see only what pion still reads), so this sends what they
// did, from each UpTrack's receive log, which sees every packet by either path:
// NACKs every nackInterval (a packet again only after a round trip) and
// receiver reports every reportInterval.
type received struct {
	in   *wire.Inbound // takes the streams' packets at the socket
	ssrc uint32        // ours, as the reports' and NACKs' sender on pion's path
	own  *ownRTCP      // the own data plane's path (nil: pion's only)

	mu   sync.Mutex // ups
	ups  []*forward.UpTrack
	wake chan struct{} // a stream was added: run looks again at once
	lost chan struct{} // a stream misses packets: a NACK round within nackInterval
}

const (
	nackInterval   = 20 * time.Millisecond // pion's generator's, as configured before
	reportInterval = time.Second           // pion's receiver interceptor's default
)

// newReceived: route is the publish connection's (nil: pion's path only).
func newReceived(in *wire.Inbound, route *wire.Route) *received {
	r := &received{in: in, ssrc: rand.Uint32(), wake: make(chan struct{}, 1), lost: make(chan struct{}, 1)}
	if route != nil {
		r.own = newOwnRTCP(route, r.ssrc)
	}
	return r
}

// add takes up's packets and sender reports at the socket and reports on
// them; remove undoes it.
func (r *received) add(up *forward.UpTrack) {
	r.mu.Lock()
	r.ups = append(r.ups, up)
	r.mu.Unlock()
	up.OnLoss(r.signalLoss)
	r.in.TakeWithReports(up.SSRC(), up.Receive, up.ReceiveReport)
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// signalLoss is UpTrack.OnLoss's: it never blocks.
func (r *received) signalLoss() {
	select {
	case r.lost <- struct{}{}:
	default:
	}
}

func (r *received) remove(up *forward.UpTrack) {
	r.in.Release(up.SSRC())
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, x := range r.ups {
		if x == up {
			r.ups = append(r.ups[:i], r.ups[i+1:]...)
			return
		}
	}
}

func (r *received) snapshot(dst []*forward.UpTrack) []*forward.UpTrack {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append(dst[:0], r.ups...)
}

// run sends the NACKs and receiver reports until done, on the own data
// plane when the connection's route allows (ownRTCP), else through write,
// pion's RTCP writer; rtt is the publish connection's round trip (0:
// unknown). It wakes every nackInterval only while some stream waits for
// repairs (a loss wakes it), else once per report: a lossless meeting costs
// no wake-ups for NACKs.
func (r *received) run(done <-chan struct{}, rtt func() time.Duration, write func([]rtcp.Packet) error) {
	t := time.NewTimer(nackInterval)
	defer t.Stop()
	var ups []*forward.UpTrack
	var seqs []uint16
	lastReport := time.Now()
	fast := true // t is armed for a NACK round, not only the next report
	for {
		select {
		case <-done:
			return
		case <-r.wake:
			t.Reset(0) // no stale tick survives Reset (Go 1.23 timers)
			fast = true
		case <-r.lost:
			if !fast {
				t.Reset(nackInterval)
				fast = true
			}
		case now := <-t.C:
			ups = r.snapshot(ups)
			report := now.Sub(lastReport) >= reportInterval-nackInterval/2
			if report {
				lastReport = now
			}
			if d := r.own.dest(); d != nil {
				seqs = r.sendOwn(d, now, rtt(), report, ups, seqs)
			} else {
				var pkts []rtcp.Packet
				for _, up := range ups {
					if seqs = up.Missing(now, rtt(), seqs[:0]); len(seqs) > 0 {
						pkts = append(pkts, &rtcp.TransportLayerNack{SenderSSRC: r.ssrc, MediaSSRC: up.SSRC(),
							Nacks: rtcp.NackPairsFromSequenceNumbers(seqs)})
					}
				}
				if report {
					pkts = append(pkts, r.reports(now, ups)...)
				}
				if len(pkts) > 0 {
					_ = write(pkts) // fails only when the connection is closing
				}
			}
			fast = awaiting(ups)
			t.Reset(nextRound(now, lastReport, fast))
		}
	}
}

// awaiting reports whether some stream still waits for repairs.
func awaiting(ups []*forward.UpTrack) bool {
	for _, up := range ups {
		if up.Awaiting() {
			return true
		}
	}
	return false
}

// nextRound is the wait after a round at now: nackInterval while some stream
// waits for repairs (fast), else until the next report is due.
func nextRound(now, lastReport time.Time, fast bool) time.Duration {
	if fast {
		return nackInterval
	}
	return max(lastReport.Add(reportInterval).Sub(now), nackInterval)
}

// sendOwn is run's round on the own data plane: the same NACKs and reports,
// written in place and sent to d. It returns seqs (scratch) for reuse.
func (r *received) sendOwn(d *wire.Dest, now time.Time, rtt time.Duration, report bool, ups []*forward.UpTrack, seqs []uint16) []uint16 {
	o := r.own
	o.buf = o.buf[:0]
	for _, up := range ups {
		if seqs = up.Missing(now, rtt, seqs[:0]); len(seqs) > 0 {
			o.buf = appendNACK(o.buf, o.ssrc, up.SSRC(), seqs)
		}
	}
	if report {
		o.buf = appendReports(o.buf, o.ssrc, now, ups)
	}
	if len(o.buf) > 0 {
		o.send(d)
	}
	return seqs
}

// reports are the receiver reports on every stream (31 blocks at most per report).
func (r *received) reports(now time.Time, ups []*forward.UpTrack) []rtcp.Packet {
	var pkts []rtcp.Packet
	var rr *rtcp.ReceiverReport
	for _, up := range ups {
		b, ok := up.ReceptionReport(now)
		if !ok {
			continue
		}
		if rr == nil || len(rr.Reports) == 31 {
			rr = &rtcp.ReceiverReport{SSRC: r.ssrc}
			pkts = append(pkts, rr)
		}
		rr.Reports = append(rr.Reports, b)
	}
	return pkts
}
