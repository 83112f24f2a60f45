// Package packetcache keeps the most recent RTP packets of one stream so NACKs
// can be answered without asking the sender again.
//
// A Cache is one contiguous buffer of fixed-size slots allocated up front;
// storing and fetching never allocate. Packets are keyed by their 16-bit RTP
// sequence number, unwrapped internally to a 64-bit extended number so a
// number reused after wraparound never returns the older packet.
//
// A Cache is not safe for concurrent use: its owner either is the single
// goroutine touching it or holds a lock around every call.
package packetcache

import (
	"errors"
	"time"
)

const (
	// DefaultSlotSize fits any packet of a 1500-byte Ethernet MTU.
	DefaultSlotSize = 1500
	// MaxCapacity is half the sequence number space: with more slots two
	// cached packets could carry the same 16-bit number.
	MaxCapacity = 1 << 15
)

var (
	// ErrBadConfig means New got a capacity that is not a power of two
	// between 1 and MaxCapacity, or a slot size that is not positive.
	ErrBadConfig = errors.New("packetcache: bad capacity or slot size")
	// ErrTooLarge means a packet does not fit in a slot; it is not stored.
	ErrTooLarge = errors.New("packetcache: packet larger than slot")
	// ErrTooOld means a packet is older than everything the cache holds but
	// too recent to mean the stream restarted; storing it would evict a
	// newer packet, so it is dropped.
	ErrTooOld = errors.New("packetcache: packet older than the cache window")
)

// Cache is a ring of the last Capacity packets by sequence number.
type Cache struct {
	buf      []byte // capacity × slotSize bytes
	slots    []slot
	slotSize int
	mask     uint64
	highest  uint64 // extended sequence number of the newest packet; 0 = none yet
}

type slot struct {
	ext      uint64 // extended sequence number held; 0 = empty
	n        int
	storedAt time.Time // first sent
	sentAt   time.Time // last sent
	resent   bool      // sent again at least once
}

// origin is the extended number of the first stored packet's cycle. It keeps
// extended numbers positive (0 can mean "empty") even for packets that
// arrive late from before the first one.
const origin = 1 << 32

// New returns a cache of capacity slots of slotSize bytes each. Capacity
// must be a power of two, so a slot index is a mask of the sequence number.
func New(capacity, slotSize int) (*Cache, error) {
	if capacity <= 0 || capacity > MaxCapacity || capacity&(capacity-1) != 0 || slotSize <= 0 {
		return nil, ErrBadConfig
	}
	return &Cache{
		buf:      make([]byte, capacity*slotSize),
		slots:    make([]slot, capacity),
		slotSize: slotSize,
		mask:     uint64(capacity - 1),
	}, nil
}

// Capacity returns the number of slots.
func (c *Cache) Capacity() int { return len(c.slots) }

// SlotSize returns the largest packet the cache stores.
func (c *Cache) SlotSize() int { return c.slotSize }

// Reset forgets every packet, for example when the stream restarts with an
// unrelated sequence number.
func (c *Cache) Reset() {
	clear(c.slots)
	c.highest = 0
}

// extend unwraps seq to the extended number nearest the newest packet:
// up to 32768 before it or 32767 after it.
func (c *Cache) extend(seq uint16) uint64 {
	if c.highest == 0 {
		return origin + uint64(seq)
	}
	return c.highest + uint64(int64(int16(seq-uint16(c.highest))))
}

// Store copies pkt in as packet seq, sent (or received) at now. A newer
// packet overwrites the oldest slot; a late one fills its slot if the cache
// still covers it. Storing a sequence number again replaces the packet.
//
// With the cache holding the last C numbers up to the newest, a packet
// between C and 2C behind the newest is a straggler: ErrTooOld. One 2C or
// more behind means the numbering jumped (the sender restarted, or a stray
// packet had pushed the window ahead): the cache forgets everything and
// starts again from it. Either way a discontinuity stalls the cache for at
// most C packets.
func (c *Cache) Store(seq uint16, pkt []byte, now time.Time) error {
	if len(pkt) > c.slotSize {
		return ErrTooLarge
	}
	ext := c.extend(seq)
	if c.highest != 0 && ext+uint64(len(c.slots)) <= c.highest {
		if ext+2*uint64(len(c.slots)) > c.highest {
			return ErrTooOld
		}
		c.Reset()
		ext = c.extend(seq)
	}
	c.highest = max(c.highest, ext)
	i := ext & c.mask
	off := int(i) * c.slotSize
	copy(c.buf[off:off+c.slotSize], pkt)
	c.slots[i] = slot{ext: ext, n: len(pkt), storedAt: now, sentAt: now}
	return nil
}

// Evicts reports when the packet that storing seq would overwrite was
// stored; ok is false when storing seq overwrites nothing (its slot is empty,
// or seq is not newer than every packet held).
func (c *Cache) Evicts(seq uint16) (storedAt time.Time, ok bool) {
	if c.highest == 0 {
		return time.Time{}, false
	}
	ext := c.extend(seq)
	if ext <= c.highest {
		return time.Time{}, false
	}
	s := &c.slots[ext&c.mask]
	if s.ext == 0 {
		return time.Time{}, false
	}
	return s.storedAt, true
}

// Grow returns a cache of twice the capacity (at most MaxCapacity) holding
// the same packets, for an owner that finds the window too short for the
// stream's rate. It allocates; c is not to be used after.
func (c *Cache) Grow() *Cache {
	if len(c.slots) >= MaxCapacity {
		return c
	}
	g, _ := c.Resize(2*len(c.slots), c.slotSize) // a power of two within bounds
	return g
}

// Resize returns a cache of capacity slots of slotSize bytes holding the
// newest packets of c that fit: for an owner whose stream sends bigger
// packets than its slots take, or more of them than it holds. It allocates;
// c is not to be used after.
func (c *Cache) Resize(capacity, slotSize int) (*Cache, error) {
	g, err := New(capacity, slotSize)
	if err != nil {
		return nil, err
	}
	g.highest = c.highest
	for i := range c.slots {
		s := c.slots[i]
		if s.ext == 0 || s.ext+uint64(len(c.slots)) <= c.highest || s.ext+uint64(capacity) <= c.highest || s.n > slotSize {
			continue // empty, behind either window, or too big
		}
		j := s.ext & g.mask
		copy(g.buf[int(j)*g.slotSize:], c.buf[i*c.slotSize:i*c.slotSize+s.n])
		g.slots[j] = s
	}
	return g, nil
}

// lookup returns the slot holding seq, or nil if it was never stored, was
// evicted, or the number refers to another wrap cycle. Packets behind the
// window count as evicted even when a jump left their slot untouched, so
// what Get sees does not depend on the gaps in between.
func (c *Cache) lookup(seq uint16) *slot {
	if c.highest == 0 {
		return nil
	}
	ext := c.extend(seq)
	if ext+uint64(len(c.slots)) <= c.highest {
		return nil
	}
	s := &c.slots[ext&c.mask]
	if s.ext != ext {
		return nil
	}
	return s
}

// Get copies packet seq into dst and returns its length and when it was last
// sent (stored or marked resent). ok is false if the packet is not cached or
// dst is shorter than it; size dst to SlotSize to avoid the latter.
func (c *Cache) Get(seq uint16, dst []byte) (n int, sentAt time.Time, ok bool) {
	s := c.lookup(seq)
	if s == nil || len(dst) < s.n {
		return 0, time.Time{}, false
	}
	off := int(s.ext&c.mask) * c.slotSize
	return copy(dst, c.buf[off:off+s.n]), s.sentAt, true
}

// MarkResent records that packet seq was sent again at now. It reports
// whether the packet is cached.
func (c *Cache) MarkResent(seq uint16, now time.Time) bool {
	s := c.lookup(seq)
	if s == nil {
		return false
	}
	s.sentAt = now
	return true
}

// Resend answers one NACKed packet: it copies packet seq into dst and marks
// it resent at now, unless it was already resent less than rtt before now, or
// first stored more than maxAge before now (0: no limit). A NACK that soon
// after a resend was sent before the receiver could have seen that copy, so
// resending would only duplicate it (thesis ch. 8); a packet that old arrives
// too late to be played, so resending it only adds to a congested link. The
// first NACK is always answered: a receiver reports a gap as soon as the next
// packet arrives, often sooner than a measured round trip (which includes the
// peer's processing) after the original send, and ignoring it cost a 5 % lossy
// link 6 fps.
func (c *Cache) Resend(seq uint16, dst []byte, now time.Time, rtt, maxAge time.Duration) (n int, ok bool) {
	s := c.lookup(seq)
	if s == nil || len(dst) < s.n || s.resent && now.Sub(s.sentAt) < rtt || maxAge > 0 && now.Sub(s.storedAt) > maxAge {
		return 0, false
	}
	s.sentAt, s.resent = now, true
	off := int(s.ext&c.mask) * c.slotSize
	return copy(dst, c.buf[off:off+s.n]), true
}
