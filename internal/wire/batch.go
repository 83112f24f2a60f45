package wire

import (
	"sync/atomic"
	"time"
)

// SlotSize is the room for one datagram: an MTU-sized packet and its tag.
const SlotSize = 1500 + Overhead

// Batch gathers protected datagrams for one system call. One goroutine owns a
// Batch (a stream's reader, a feedback reader, a pacer): it writes packets into
// Slot, Commits them, and Flushes once its work for the moment is done, with
// no lock held. A full batch flushes itself.
//
// Flush sends one destination's datagrams together, in the order committed
// (the order across destinations does not matter), and on Linux a run of them
// of one size (the last may be shorter) as one UDP GSO train: a frame's
// packets, which senders cut to near-equal sizes, cost the kernel one trip
// down the stack per destination instead of one per packet.
//
// A socket that cannot take more (its send buffer full) drops what is left of
// the batch for it: a slow path never stalls the owner, and UDP loses packets
// there anyway.
type Batch struct {
	buf   []byte // len(dests) slots of SlotSize
	lens  []int
	dests []*Dest
	n     int
	// order is the send order Flush makes (slot indexes).
	order  []int32
	groups groups
	sys    batchSys
	Stats  *Counters // optional, shared
	// Hold marks a batch whose owner flushes it when its input runs dry (a
	// socket's reader: FlushIdle), so a writer may leave a video frame's
	// packets in it until the frame's last, and they leave together.
	Hold bool
	// samples wait for the system call that sends their packets (Sample).
	samples  [maxSamples]pendingSample
	nsamples int
}

// A Sampler records a sampled packet's latency once n of its datagrams were
// handed to the kernel; wire and read are when it came off the socket and
// when the forwarding path had it.
type Sampler interface {
	Sample(n int, wire, read time.Time)
}

type pendingSample struct {
	to         Sampler
	n          int
	wire, read time.Time
}

const maxSamples = 16

// Counters count what batches did; safe to share between batches.
type Counters struct {
	Datagrams atomic.Uint64 // handed to the kernel
	Calls     atomic.Uint64 // system calls
	Dropped   atomic.Uint64 // refused by the socket (buffer full, unreachable)
	Trains    atomic.Uint64 // GSO trains (messages of more than one datagram)
}

// NewBatch returns a batch of up to slots datagrams.
func NewBatch(slots int) *Batch {
	slots = max(slots, 1)
	b := &Batch{buf: make([]byte, slots*SlotSize), lens: make([]int, slots), dests: make([]*Dest, slots),
		order: make([]int32, 0, slots), groups: newGroups(slots)}
	b.sys.init(b, slots)
	return b
}

// Slot is the buffer for the next datagram (length 0, capacity SlotSize; nil
// when the batch is full: check Free, and Flush with no lock held).
func (b *Batch) Slot() []byte {
	if b.n == len(b.dests) {
		return nil
	}
	off := b.n * SlotSize
	return b.buf[off : off : off+SlotSize]
}

// Free is the number of datagrams that can still be queued.
func (b *Batch) Free() int { return len(b.dests) - b.n }

// Commit queues the first n bytes of the last Slot for d.
func (b *Batch) Commit(n int, d *Dest) {
	if n <= 0 || n > SlotSize || d == nil || d.Sock == nil || b.n == len(b.dests) {
		return
	}
	b.lens[b.n] = n
	b.dests[b.n] = d
	b.n++
}

// Len is the number of datagrams waiting.
func (b *Batch) Len() int { return b.n }

// Sample tells to, once the datagrams queued so far reached the kernel, that
// n of them carried a sampled packet (at once when none wait).
func (b *Batch) Sample(to Sampler, n int, wire, read time.Time) {
	if b.n == 0 {
		to.Sample(n, wire, read)
		return
	}
	if b.nsamples == maxSamples {
		b.Flush()
		to.Sample(n, wire, read)
		return
	}
	b.samples[b.nsamples] = pendingSample{to: to, n: n, wire: wire, read: read}
	b.nsamples++
}

// FlushIdle flushes unless a datagram waits to be read on s: the owner, s's
// one reader, reads it next and adds its fan-out to the batch.
func (b *Batch) FlushIdle(s *Socket) int {
	if b.n == 0 || b.sys.queued(s) {
		return 0
	}
	return b.Flush()
}

// Flush sends every queued datagram, one system call per socket (more when
// the socket refuses some), and reports how many the kernel took.
func (b *Batch) Flush() int {
	b.group()
	sent := 0
	for start := 0; start < len(b.order); {
		sock := b.dests[b.order[start]].Sock
		end := start + 1
		for end < len(b.order) && b.dests[b.order[end]].Sock == sock {
			end++
		}
		k, calls, trains := b.sys.send(b, b.order[start:end])
		sent += k
		if b.Stats != nil {
			b.Stats.Datagrams.Add(uint64(k))
			b.Stats.Calls.Add(uint64(calls))
			b.Stats.Dropped.Add(uint64(end - start - k))
			b.Stats.Trains.Add(uint64(trains))
		}
		start = end
	}
	for i := range b.n {
		b.dests[i] = nil
	}
	b.n = 0
	for i := range b.nsamples {
		s := &b.samples[i]
		s.to.Sample(s.n, s.wire, s.read)
		*s = pendingSample{}
	}
	b.nsamples = 0
	return sent
}

// group fills order with the queued slots: one socket's together, within it
// one destination's together, each destination's in the order committed. It
// chains each destination's slots through a small hash table on the
// destination's id: linear in the slots, and allocation-free.
func (b *Batch) group() {
	g := &b.groups
	g.runs = g.runs[:0]
	mask := uint64(len(g.table) - 1)
	for i := range b.n {
		d := b.dests[i]
		h := (d.id * 0x9E3779B97F4A7C15) >> 32 & mask
		for g.table[h] != 0 && g.runs[g.table[h]-1].d != d {
			h = (h + 1) & mask
		}
		g.next[i] = -1
		if g.table[h] == 0 {
			g.runs = append(g.runs, destRun{d: d, head: int32(i), tail: int32(i), at: uint32(h)})
			g.table[h] = int32(len(g.runs))
			continue
		}
		r := &g.runs[g.table[h]-1]
		g.next[r.tail] = int32(i)
		r.tail = int32(i)
	}
	b.order = b.order[:0]
	for i := range g.runs {
		sock := g.runs[i].d.Sock
		if sock == nil {
			continue // placed with an earlier run's socket
		}
		for j := i; j < len(g.runs); j++ {
			r := &g.runs[j]
			if r.d.Sock != sock {
				continue
			}
			for k := r.head; k >= 0; k = g.next[k] {
				b.order = append(b.order, k)
			}
			g.table[r.at] = 0
			r.d = &placed
		}
	}
}

// groups is group's scratch: the table (a power of two, at least twice the
// slots) maps a destination to its run; next chains a run's slots.
type groups struct {
	table []int32 // run index + 1; 0: empty
	next  []int32
	runs  []destRun
}

type destRun struct {
	d          *Dest
	head, tail int32
	at         uint32 // its table entry
}

// placed stands for a run already in order (its socket nil).
var placed Dest

func newGroups(slots int) groups {
	size := 1
	for size < 2*slots {
		size <<= 1
	}
	return groups{table: make([]int32, size), next: make([]int32, slots), runs: make([]destRun, 0, slots)}
}

// Send queues a copy of p for d and flushes at once: for rare packets outside
// any batch (tests, one-off sends).
func (b *Batch) Send(p []byte, d *Dest) int {
	if b.Free() == 0 {
		b.Flush()
	}
	s := b.Slot()
	b.Commit(len(append(s, p...)), d)
	return b.Flush()
}
