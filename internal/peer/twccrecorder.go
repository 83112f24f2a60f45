package peer

import "encoding/binary"

// twccRecorder is pion's twcc.Recorder (interceptor v0.1.48, after
// libwebrtc's remote_estimator_proxy and packet_arrival_map) without its
// allocations: it keeps the arrival times of the packets a connection
// received, by transport-wide sequence number, and writes the transport-wide
// congestion control feedback on them (draft-holmer-rmcat-transport-wide-cc-
// extensions-01 section 3.1) straight into the caller's buffer. Pion's built
// a TransportLayerCC with one object per status chunk and per packet, then
// its SRTCP session marshalled and sealed it: 41 % of the server's heap
// allocations in meeting-8.
//
// Its output is pion's byte for byte (TestTWCCRecorderMatchesPion), except
// that a feedback packet ends before it would outgrow maxFeedbackSize bytes,
// up to feedbackSlack bytes short of it, and the next one goes on where it
// stopped (pion's grow without bound). Pure: arrival times are
// microseconds from any fixed zero, given by the caller. It allocates only
// while its arrival ring grows or shrinks with the packet rate.
type twccRecorder struct {
	ring       []int64 // arrival µs by unwrapped sequence number & (len-1); -1: not received
	begin, end int64   // the unwrapped sequence numbers held: [begin, end)
	unwrapped  int64   // the last unwrapped sequence number
	started    bool    // a packet was recorded
	start      int64   // the first sequence number the next feedback reports
	mediaSSRC  uint32  // of the last packet recorded, as pion's
	fbCount    uint8

	// The feedback being built.
	fb      feedbackState
	chunks  []uint16 // status chunks finished
	deltas  []byte   // receive deltas, encoded
	ringOld []int64  // the previous ring, reused when the size returns
}

const (
	twccWindowUS      = 500_000 // arrivals kept after they were reported, for late packets
	twccMaxMissing    = 0x7ffe  // the most missing packets one feedback reports before its first received one
	twccMinRing       = 128
	twccMaxPackets    = 1 << 15
	twccDeltaUS       = 250    // a receive delta's unit
	twccReferenceUS   = 64_000 // the reference time's unit
	twccHeaderLen     = 20     // RTCP header, sender and media SSRC, base, count, reference time, fb count
	twccRunLengthMax  = 0x1fff
	twccOneBitSymbols = 14
	twccTwoBitSymbols = 7
	// maxFeedbackSize bounds one feedback packet, so that it fits a datagram
	// with SRTCP's index and tag on any path; the next one reports the rest.
	maxFeedbackSize = 1200
	// feedbackSlack: addReceived counts the pending chunk as two chunks and
	// the padding as 3 bytes, so a packet may end this many bytes short of
	// maxFeedbackSize. Counting them exactly would not make the cut exact: a
	// 13-symbol chunk encodes as two chunks, with a 14th symbol as one.
	feedbackSlack = 5
)

// Packet status symbols.
const (
	symNotReceived = 0
	symSmallDelta  = 1
	symLargeDelta  = 2
)

// feedbackState is one feedback packet's progress: pion's feedback and its
// last chunk, with the symbols in an array.
type feedbackState struct {
	base, next uint16 // the first sequence number reported, the next one
	count      uint16 // statuses so far
	fbCount    uint8  // the feedback's number
	refUS      int64  // the reference time, in 64 ms units
	lastUS     int64  // the arrival time the next delta is taken from, as rounded
	chunk      chunkState
}

// chunkState is the status chunk being filled: its symbols (all of them while
// they may still become a status vector, at most 14; a longer chunk is a run
// of one symbol).
type chunkState struct {
	syms  [twccOneBitSymbols]uint8
	n     int
	large bool // holds a large delta
	mixed bool // holds different symbols
}

func newTWCCRecorder() *twccRecorder {
	return &twccRecorder{}
}

// Record notes that the packet of mediaSSRC with transport-wide sequence
// number seq arrived at arrivalUS.
func (r *twccRecorder) Record(mediaSSRC uint32, seq uint16, arrivalUS int64) {
	r.mediaSSRC = mediaSSRC
	u := r.unwrap(seq)
	if r.started && r.start >= r.end && arrivalUS >= twccWindowUS {
		r.removeOld(u, arrivalUS-twccWindowUS)
	}
	if !r.started || u < r.start {
		r.start = u
		r.started = true
	}
	if r.arrival(u) >= 0 {
		return // only a packet's first arrival counts
	}
	r.add(u, arrivalUS)
	r.start = max(r.start, r.begin)
}

// unwrap extends seq to 64 bits next to the last one (libwebrtc's
// SeqNumUnwrapper: a number within half the range ahead is newer).
func (r *twccRecorder) unwrap(seq uint16) int64 {
	if !r.started {
		r.unwrapped = int64(seq)
		return r.unwrapped
	}
	last := uint16(r.unwrapped) //nolint:gosec // the low 16 bits
	delta := int64(seq - last)
	if newer(seq, last) {
		if delta < 0 {
			delta += 1 << 16
		}
	} else if delta > 0 && r.unwrapped+delta-(1<<16) >= 0 {
		delta -= 1 << 16
	}
	r.unwrapped += delta
	return r.unwrapped
}

func newer(v, prev uint16) bool {
	if v-prev == 1<<15 {
		return v > prev
	}
	return v != prev && v-prev < 1<<15
}

func (r *twccRecorder) arrival(u int64) int64 {
	if u < r.begin || u >= r.end {
		return -1
	}
	return r.ring[u&int64(len(r.ring)-1)]
}

func (r *twccRecorder) set(u, at int64) { r.ring[u&int64(len(r.ring)-1)] = at }

// add is pion's packetArrivalTimeMap.AddPacket.
func (r *twccRecorder) add(u, at int64) {
	switch {
	case r.ring == nil:
		r.resize(twccMinRing)
		r.begin, r.end = u, u+1
		r.set(u, at)
	case u >= r.begin && u < r.end:
		r.set(u, at)
	case u < r.begin:
		size := r.end - u
		if size > twccMaxPackets {
			return // it would push out newer packets
		}
		r.fit(int(size))
		r.set(u, at)
		for s := u + 1; s < r.begin; s++ {
			r.set(s, -1)
		}
		r.begin = u
	default:
		end := u + 1
		if end >= r.end+twccMaxPackets {
			r.begin, r.end = u, end
			r.set(u, at)
			return
		}
		r.begin = max(r.begin, end-twccMaxPackets)
		r.fit(int(end - r.begin))
		for s := r.end; s < u; s++ {
			r.set(s, -1)
		}
		r.end = end
		r.set(u, at)
	}
}

// removeOld drops the packets before seq that arrived at or before limit
// from the front.
func (r *twccRecorder) removeOld(seq, limit int64) {
	to := min(seq, r.end)
	for r.begin < to && r.arrival(r.begin) <= limit {
		r.begin++
	}
	r.fit(int(r.end - r.begin))
}

// fit resizes the ring (a power of two) to hold size packets, and shrinks it
// once it is over four times too big, as pion's.
func (r *twccRecorder) fit(size int) {
	c := len(r.ring)
	switch {
	case size > c:
		for c < size {
			c *= 2
		}
	case c > max(twccMinRing, 4*size):
		for c >= 2*max(size, twccMinRing) {
			c /= 2
		}
	default:
		return
	}
	r.resize(c)
}

func (r *twccRecorder) resize(c int) {
	next := r.ringOld
	if cap(next) >= c {
		next = next[:c]
	} else {
		next = make([]int64, c)
	}
	old := r.ring
	r.ring = next
	for s := r.begin; s < r.end; s++ {
		r.set(s, old[s&int64(len(old)-1)])
	}
	r.ringOld = old
}

// nextAtOrAfter is the first received packet from seq on.
func (r *twccRecorder) nextAtOrAfter(seq int64) (int64, int64, bool) {
	for s := r.clamp(seq); s < r.end; s++ {
		if at := r.arrival(s); at >= 0 {
			return s, at, true
		}
	}
	return -1, -1, false
}

func (r *twccRecorder) clamp(seq int64) int64 { return min(max(seq, r.begin), r.end) }

// AppendFeedback appends to dst the feedback packets on what was recorded
// since the last call, with sender as their sender SSRC, and returns dst
// (unchanged when there is nothing to report).
func (r *twccRecorder) AppendFeedback(dst []byte, sender uint32) []byte {
	if !r.started {
		return dst
	}
	end := r.end
	for r.start < end {
		var ok bool
		if dst, ok = r.appendOne(dst, sender, r.start, end); !ok {
			break
		}
	}
	return dst
}

// appendOne appends one feedback from begin (inclusive) to end (exclusive),
// as pion's maybeBuildFeedbackPacket, and moves start past what it reported.
func (r *twccRecorder) appendOne(dst []byte, sender uint32, begin, end int64) ([]byte, bool) {
	started := false
	next, last := begin, r.clamp(end)
	for seq := r.clamp(begin); seq < last; seq++ {
		found, at, ok := r.nextAtOrAfter(seq)
		if !ok || found >= last {
			break
		}
		seq = found
		if !started {
			started = true
			r.beginFeedback(uint16(max(begin, seq-twccMaxMissing)), at) //nolint:gosec // the low 16 bits
			// The first packet is at most 64 ms after the reference time,
			// and a run of missing ones fits in a few chunks: it always fits.
			r.addReceived(uint16(seq), at) //nolint:gosec // the low 16 bits
		} else if !r.addReceived(uint16(seq), at) { //nolint:gosec // the low 16 bits
			break
		}
		next = seq + 1
	}
	r.start = next
	if !started {
		return dst, false
	}
	return r.encode(dst, sender), true
}

func (r *twccRecorder) beginFeedback(base uint16, atUS int64) {
	ref := atUS / twccReferenceUS
	r.fb = feedbackState{base: base, next: base, refUS: ref, lastUS: ref * twccReferenceUS, fbCount: r.fbCount}
	r.fbCount++
	r.chunks = r.chunks[:0]
	r.deltas = r.deltas[:0]
}

// addReceived adds the packet seq arriving at atUS, after the missing ones
// before it, or reports false, changing nothing, when its delta does not fit
// in 16 bits or the feedback would outgrow maxFeedbackSize.
func (r *twccRecorder) addReceived(seq uint16, atUS int64) bool {
	d := atUS - r.fb.lastUS
	if d >= 0 {
		d = (d + twccDeltaUS/2) / twccDeltaUS
	} else {
		d = (d - twccDeltaUS/2) / twccDeltaUS
	}
	if d < -1<<15 || d > 1<<15-1 {
		return false
	}
	saved, nChunks, nDeltas := r.fb, len(r.chunks), len(r.deltas)
	for ; r.fb.next != seq; r.fb.next++ {
		r.addSymbol(symNotReceived)
	}
	sym := uint8(symSmallDelta)
	if d < 0 || d > 0xff {
		sym = symLargeDelta
		r.deltas = binary.BigEndian.AppendUint16(r.deltas, uint16(d)) //nolint:gosec // int16 two's complement
	} else {
		r.deltas = append(r.deltas, byte(d))
	}
	r.addSymbol(sym)
	// The pending chunk encodes as two chunks at most; padding adds up to 3.
	if twccHeaderLen+2*(len(r.chunks)+2)+len(r.deltas)+3 > maxFeedbackSize {
		r.fb, r.chunks, r.deltas = saved, r.chunks[:nChunks], r.deltas[:nDeltas]
		return false
	}
	r.fb.lastUS += d * twccDeltaUS
	r.fb.next++
	return true
}

func (r *twccRecorder) addSymbol(s uint8) {
	c := &r.fb.chunk
	if !c.canAdd(s) {
		r.chunks = append(r.chunks, c.take())
	}
	c.add(s)
	r.fb.count++
}

func (c *chunkState) canAdd(s uint8) bool {
	return c.n < twccTwoBitSymbols ||
		c.n < twccOneBitSymbols && !c.large && s != symLargeDelta ||
		c.n < twccRunLengthMax && !c.mixed && s == c.syms[0]
}

func (c *chunkState) add(s uint8) {
	if c.n < len(c.syms) {
		c.syms[c.n] = s
	}
	c.n++
	c.large = c.large || s == symLargeDelta
	c.mixed = c.mixed || s != c.syms[0]
}

// take encodes the chunk's symbols as pion does: a run when they are all
// alike, 14 one-bit symbols when it is full of them, else its first 7 as
// two-bit symbols (the rest stay).
func (c *chunkState) take() uint16 {
	switch {
	case !c.mixed:
		v := uint16(c.syms[0])<<13 | uint16(c.n) //nolint:gosec // n ≤ 0x1fff
		*c = chunkState{}
		return v
	case c.n == twccOneBitSymbols:
		v := uint16(0x8000)
		for i, s := range c.syms {
			v |= uint16(s) << (13 - i)
		}
		*c = chunkState{}
		return v
	}
	k := min(twccTwoBitSymbols, c.n)
	v := uint16(0xc000)
	for i := range k {
		v |= uint16(c.syms[i]) << (12 - 2*i)
	}
	rest := c.syms
	*c = chunkState{n: c.n - k}
	copy(c.syms[:], rest[k:k+c.n])
	for _, s := range c.syms[:c.n] {
		c.large = c.large || s == symLargeDelta
		c.mixed = c.mixed || s != c.syms[0]
	}
	return v
}

// encode finishes the feedback and appends it to dst.
func (r *twccRecorder) encode(dst []byte, sender uint32) []byte {
	for r.fb.chunk.n > 0 {
		r.chunks = append(r.chunks, r.fb.chunk.take())
	}
	n := twccHeaderLen + 2*len(r.chunks) + len(r.deltas)
	pad := (4 - n%4) % 4
	b0 := byte(2<<6 | 15) // version 2, FMT 15 (transport-wide CC)
	if pad > 0 {
		b0 |= 1 << 5
	}
	dst = append(dst, b0, 205)
	dst = binary.BigEndian.AppendUint16(dst, uint16((n+pad)/4-1)) //nolint:gosec // ≤ maxFeedbackSize
	dst = binary.BigEndian.AppendUint32(dst, sender)
	dst = binary.BigEndian.AppendUint32(dst, r.mediaSSRC)
	dst = binary.BigEndian.AppendUint16(dst, r.fb.base)
	dst = binary.BigEndian.AppendUint16(dst, r.fb.count)
	dst = binary.BigEndian.AppendUint32(dst, uint32(r.fb.refUS)<<8|uint32(r.fb.fbCount)) //nolint:gosec // 24 bits of it
	for _, c := range r.chunks {
		dst = binary.BigEndian.AppendUint16(dst, c)
	}
	dst = append(dst, r.deltas...)
	for i := range pad {
		if i == pad-1 {
			dst = append(dst, byte(pad))
		} else {
			dst = append(dst, 0)
		}
	}
	return dst
}
