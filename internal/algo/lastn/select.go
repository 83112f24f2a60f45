package lastn

import "slices"

// Select returns the video senders receiver self gets:
// P ∪ the first N−|P| ids of L \ P \ {self} (thesis 4.3).
//
//   - n < 0 means unlimited.
//   - Pins not in order, pins naming self and repeated pins are ignored.
//   - If more than n pins remain, the first n in the given order are kept.
//   - The result lists the kept pins in the given order, then the rest in
//     order; it is a subset of order and never contains self.
func Select(order []ID, self ID, pinned []ID, n int) []ID {
	return AppendSelect(nil, order, self, pinned, n)
}

// AppendSelect is Select appending into dst, which it returns. It does not
// allocate when dst has room for the result (at most min(n, len(order))).
// The cost is O(|pinned|·|order|), fine for the handful of pins a receiver has.
func AppendSelect(dst []ID, order []ID, self ID, pinned []ID, n int) []ID {
	if n < 0 {
		n = len(order)
	}
	start := len(dst)
	for _, p := range pinned {
		if len(dst)-start >= n {
			break
		}
		if p == self || slices.Contains(dst[start:], p) || !slices.Contains(order, p) {
			continue
		}
		dst = append(dst, p)
	}
	pins := len(dst) - start
	for _, id := range order {
		if len(dst)-start >= n {
			break
		}
		// Skipping every valid pin, not just the kept ones, is the same
		// thing here: when this loop runs, all valid pins were kept.
		if id == self || slices.Contains(dst[start:start+pins], id) {
			continue
		}
		dst = append(dst, id)
	}
	return dst
}
