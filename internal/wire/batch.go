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
// A socket that cannot take more (its send buffer full) drops what is left of
// the batch for it: a slow path never stalls the owner, and UDP loses packets
// there anyway.
//
// On Linux a flush sends each destination's run of packets cut alike (equal
// sizes, a smaller last one: how a frame is cut) as one UDP GSO datagram train,
// which the kernel segments for about half the per-datagram cost.
type Batch struct {
	buf   []byte // len(dests) slots of SlotSize
	lens  []int
	dests []*Dest
	n     int
	sys   batchSys
	Stats *Counters // optional, shared

	// Held: the owner flushes when its read of the socket runs dry, so a
	// writer may leave datagrams queued between the packets of one frame read
	// together, to leave as one train per receiver. They wait at most the
	// rest of that read.
	Held bool

	// Sampler, when set, is told each Timed datagram's send once the flush
	// carrying it has handed it to the kernel (benchmarks' latency).
	Sampler Sampler
	timed   []timedSend

	departs []departure // Stamped datagrams, told their send time after the flush
}

// Departure is told when a datagram it Stamped was handed to the kernel: a
// bandwidth estimator's send time is that, not when the packet was built.
type Departure interface {
	Departed(seq uint16, at time.Time)
}

type departure struct {
	to  Departure
	seq uint16
}

// Sampler records when sampled datagrams were handed to the kernel.
type Sampler interface {
	// Sent: a packet that left its socket's queue at wire and was read at
	// read went out at sent.
	Sent(wire, read, sent time.Time)
}

type timedSend struct{ wire, read time.Time }

// Counters count what batches did; safe to share between batches.
type Counters struct {
	Datagrams atomic.Uint64 // handed to the kernel
	Messages  atomic.Uint64 // what carried them: a datagram, or a train of them (GSO)
	Calls     atomic.Uint64 // system calls
	Dropped   atomic.Uint64 // refused by the socket (buffer full, unreachable)
}

// NewBatch returns a batch of up to slots datagrams.
func NewBatch(slots int) *Batch {
	slots = max(slots, 1)
	b := &Batch{buf: make([]byte, slots*SlotSize), lens: make([]int, slots), dests: make([]*Dest, slots),
		timed: make([]timedSend, 0, slots), departs: make([]departure, 0, slots)}
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
	if n <= 0 || n > SlotSize || d == nil || b.n == len(b.dests) {
		return
	}
	b.lens[b.n] = n
	b.dests[b.n] = d
	b.n++
}

// Len is the number of datagrams waiting.
func (b *Batch) Len() int { return b.n }

// Timed marks the last committed datagram for the Sampler, with when its
// packet left the socket's queue (wire; zero if unknown) and was read.
func (b *Batch) Timed(wire, read time.Time) {
	if b.Sampler != nil && b.n > len(b.timed) {
		b.timed = append(b.timed, timedSend{wire, read})
	}
}

// Stamp has d told, after the flush, when the last committed datagram (its
// packet seq) was handed to the kernel.
func (b *Batch) Stamp(d Departure, seq uint16) {
	if b.n > len(b.departs) && len(b.departs) < cap(b.departs) {
		b.departs = append(b.departs, departure{d, seq})
	}
}

// Flush sends every queued datagram, one system call per run of datagrams for
// the same socket, and reports how many the kernel took.
func (b *Batch) Flush() int {
	sent := 0
	for start := 0; start < b.n; {
		end := start + 1
		for end < b.n && b.dests[end].Sock == b.dests[start].Sock {
			end++
		}
		k, msgs, calls := b.sys.send(b, start, end)
		sent += k
		if b.Stats != nil {
			b.Stats.Datagrams.Add(uint64(k))
			b.Stats.Messages.Add(uint64(msgs))
			b.Stats.Calls.Add(uint64(calls))
			b.Stats.Dropped.Add(uint64(end - start - k))
		}
		start = end
	}
	for i := range b.n {
		b.dests[i] = nil
	}
	b.n = 0
	if len(b.timed) == 0 && len(b.departs) == 0 {
		return sent
	}
	now := time.Now()
	for _, t := range b.timed {
		b.Sampler.Sent(t.wire, t.read, now)
	}
	b.timed = b.timed[:0]
	for i, d := range b.departs {
		d.to.Departed(d.seq, now)
		b.departs[i].to = nil
	}
	b.departs = b.departs[:0]
	return sent
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
