//go:build !race

package forward

import (
	"unsafe"

	"github.com/podium-sfu/podium/internal/prefetch"
)

// downHotLines: DownTrack's fields a write reads first (the first 264 bytes).
const downHotLines = 5

// prefetchAhead asks for the state of the destinations the fan-out writes
// after downs[i], each step one pointer deeper than the one before: a step
// reads only pointers an earlier step already brought in, so none of them
// waits for memory (docs/performance.md, "Prefetching the next destination").
func prefetchAhead(downs []*DownTrack, i int) {
	if j := i + 4; j < len(downs) {
		prefetch.Lines(unsafe.Pointer(downs[j]), downHotLines)
	}
	if j := i + 3; j < len(downs) {
		downs[j].prefetchState()
	}
	if j := i + 2; j < len(downs) {
		downs[j].prefetchKeys()
	}
	if j := i + 1; j < len(downs) {
		if l := downs[j].link.Load(); l != nil {
			l.est.PrefetchNextSend()
		}
	}
}

// prefetchState: what d's hot fields point at, the connection's Link, the
// sealer, projector and sent log. The pointers are read without d.mu (never
// in race builds): a stale one only asks for lines nobody reads.
func (d *DownTrack) prefetchState() {
	if l := d.link.Load(); l != nil {
		prefetch.Lines(unsafe.Pointer(l), 1)
	}
	if s := d.seal; s != nil {
		prefetch.Lines(unsafe.Pointer(s), 2)
	}
	if p := d.proj; p != nil {
		prefetch.Lines(unsafe.Pointer(p), 2)
	}
	if l := d.sent; l != nil {
		prefetch.Lines(unsafe.Pointer(l), 1)
	}
}

// prefetchKeys: one pointer further, the estimator, the AES-GCM state and the
// sent log's next entry.
func (d *DownTrack) prefetchKeys() {
	if l := d.link.Load(); l != nil {
		prefetch.Lines(unsafe.Pointer(l.est), 2)
	}
	if s := d.seal; s != nil {
		s.PrefetchAEAD()
	}
	if l := d.sent; l != nil {
		// Masked by the slice's own length (a power of two): a read racing a
		// grow may ask for the wrong line, never index out of range.
		if e := l.entries; len(e) > 0 {
			prefetch.Lines(unsafe.Pointer(&e[(l.highest+1)&uint64(len(e)-1)]), 1)
		}
	}
}
