package relay

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"time"
)

// RTT probing between relays (docs/cluster.md, Where the RTTs come from).
const (
	// ProbeEvery is how often a node probes each other node's relay.
	ProbeEvery = time.Second
	// probeSlots bounds the probes in flight: an echo that comes back after
	// this many newer probes (64 s with two nodes, 4 s with sixteen) counts
	// for nothing.
	probeSlots = 64
	// rttMaxAge: a node with no echo for this long has no RTT (it died, or
	// its path did).
	rttMaxAge = 10 * time.Second
)

// rttTable is a node's probes in flight and its smoothed RTT to each other
// node. Pure: time is an argument; the Prober locks it.
type rttTable struct {
	seq      uint32
	inflight [probeSlots]inflight
	nodes    map[string]*smoothed
}

type inflight struct {
	seq  uint32
	node string // "": free
	at   time.Time
}

// smoothed is RFC 6298's SRTT: the first sample, then 7/8 of the old value
// and 1/8 of each new one.
type smoothed struct {
	rtt time.Duration
	at  time.Time // the latest sample
}

func newRTTTable() *rttTable { return &rttTable{nodes: map[string]*smoothed{}} }

// sent records a probe to node at now and returns its sequence number.
func (t *rttTable) sent(node string, now time.Time) uint32 {
	t.seq++
	t.inflight[t.seq%probeSlots] = inflight{seq: t.seq, node: node, at: now}
	return t.seq
}

// echoed takes node's echo of probe seq at now; false when no such probe is
// in flight (a late, repeated or foreign echo).
func (t *rttTable) echoed(node string, seq uint32, now time.Time) (time.Duration, bool) {
	f := &t.inflight[seq%probeSlots]
	if f.node == "" || f.seq != seq || f.node != node || now.Before(f.at) {
		return 0, false
	}
	sample := now.Sub(f.at)
	*f = inflight{}
	s := t.nodes[node]
	if s == nil {
		s = &smoothed{rtt: sample}
		t.nodes[node] = s
	} else {
		s.rtt += (sample - s.rtt) / 8
	}
	s.at = now
	return sample, true
}

// rtt is the smoothed RTT to node at now; false without a sample within rttMaxAge.
func (t *rttTable) rtt(node string, now time.Time) (time.Duration, bool) {
	s := t.nodes[node]
	if s == nil || now.Sub(s.at) > rttMaxAge {
		return 0, false
	}
	return s.rtt, true
}

// keepOnly forgets the nodes not in targets.
func (t *rttTable) keepOnly(targets map[string]netip.AddrPort) {
	for node := range t.nodes {
		if _, ok := targets[node]; !ok {
			delete(t.nodes, node)
		}
	}
}

// ProbeConfig configures StartProbes.
type ProbeConfig struct {
	// Targets are the other nodes' relay addresses by node id, asked before
	// each round of probes.
	Targets func() map[string]netip.AddrPort
	// Reply is this node's relay address as the others reach it, named in
	// every probe for the echo.
	Reply func() netip.AddrPort
	// Every is the probing period (0: ProbeEvery).
	Every time.Duration
}

// ProbeStats count a prober's datagrams.
type ProbeStats struct {
	Probes, Echoes, Samples, Malformed atomic.Uint64
}

// Prober measures the round trip to every other node's relay and echoes
// their probes. Its table is locked by mu: the probing loop and the
// transport's reader (echoes) share it.
type Prober struct {
	t     *Transport
	cfg   ProbeConfig
	mu    sync.Mutex
	table *rttTable
	stats ProbeStats
	stop  chan struct{}
	wg    sync.WaitGroup
}

// StartProbes starts probing from t and answering the others' probes on it.
func StartProbes(t *Transport, cfg ProbeConfig) *Prober {
	if cfg.Every <= 0 {
		cfg.Every = ProbeEvery
	}
	p := &Prober{t: t, cfg: cfg, table: newRTTTable(), stop: make(chan struct{})}
	t.probes.Store(p)
	p.wg.Add(1)
	go func() { defer p.wg.Done(); p.loop() }()
	return p
}

// Close stops probing; the others' probes go unanswered.
func (p *Prober) Close() {
	p.t.probes.Store(nil)
	close(p.stop)
	p.wg.Wait()
}

// Stats are the prober's counters.
func (p *Prober) Stats() *ProbeStats { return &p.stats }

// RTT is the smoothed round trip to node's relay at now; false when unmeasured.
func (p *Prober) RTT(node string, now time.Time) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.table.rtt(node, now)
}

// RTTs are the smoothed round trips to every node measured at now.
func (p *Prober) RTTs(now time.Time) map[string]time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]time.Duration{}
	for node := range p.table.nodes {
		if d, ok := p.table.rtt(node, now); ok {
			out[node] = d
		}
	}
	return out
}

func (p *Prober) loop() {
	tick := time.NewTicker(p.cfg.Every)
	defer tick.Stop()
	var body []byte
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		targets, reply := p.cfg.Targets(), p.cfg.Reply()
		p.mu.Lock()
		p.table.keepOnly(targets)
		p.mu.Unlock()
		for node, addr := range targets {
			now := time.Now()
			p.mu.Lock()
			seq := p.table.sent(node, now)
			p.mu.Unlock()
			body = AppendProbe(body[:0], seq, reply)
			if p.t.Send(now, addr, KindProbe, 0, body) == nil {
				p.stats.Probes.Add(1)
			}
		}
	}
}

// receive takes a probe datagram's body from sender (the transport's reader):
// a probe is echoed, an echo is a sample.
func (p *Prober) receive(now time.Time, sender uint32, body []byte) {
	var pr Probe
	if ParseProbe(body, &pr) != nil {
		p.stats.Malformed.Add(1)
		return
	}
	if !pr.Echo {
		var b [echoLen]byte
		if p.t.Send(now, pr.Reply, KindProbe, 0, AppendEcho(b[:0], pr.Seq)) == nil {
			p.stats.Echoes.Add(1)
		}
		return
	}
	node, ok := p.t.peers.Node(sender)
	if !ok {
		return
	}
	p.mu.Lock()
	_, ok = p.table.echoed(node, pr.Seq, now)
	p.mu.Unlock()
	if ok {
		p.stats.Samples.Add(1)
	}
}
