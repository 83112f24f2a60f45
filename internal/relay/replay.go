package relay

// WindowSize is how far behind the newest counter a datagram may arrive and
// still be accepted once: reordering on the relay hop beyond 1024 datagrams of
// one sender is loss.
const WindowSize = 1024

// Window is a sliding replay window over one key's counters, as SRTP's
// (RFC 3711 3.3.2): a counter is accepted once, and not when it is
// WindowSize or more behind the highest accepted. Check before opening,
// Accept only after the datagram authenticated, so that forgeries cannot move
// it. Pure; one owner.
type Window struct {
	top  uint64                  // highest accepted counter
	any  bool                    // some counter accepted
	bits [WindowSize / 64]uint64 // bit c%WindowSize: counter c accepted (for c in (top-WindowSize, top])
}

// Check reports whether counter c would be accepted.
func (w *Window) Check(c uint64) bool {
	if !w.any || c > w.top {
		return true
	}
	if w.top-c >= WindowSize {
		return false
	}
	i := c % WindowSize
	return w.bits[i/64]&(1<<(i%64)) == 0
}

// Accept records counter c (which Check accepted).
func (w *Window) Accept(c uint64) {
	switch {
	case !w.any || c > w.top && c-w.top >= WindowSize:
		w.bits = [WindowSize / 64]uint64{}
		w.top, w.any = c, true
	case c > w.top:
		for x := w.top + 1; x < c; x++ { // counters skipped: not seen yet
			i := x % WindowSize
			w.bits[i/64] &^= 1 << (i % 64)
		}
		w.top = c
	}
	i := c % WindowSize
	w.bits[i/64] |= 1 << (i % 64)
}
