package lastn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSelect(t *testing.T) {
	L := ids("a", "b", "c", "d", "e", "f")
	tests := []struct {
		name   string
		order  []ID
		self   ID
		pinned []ID
		n      int
		want   []ID
	}{
		{"no pins", L, "e", nil, 3, ids("a", "b", "c")},
		{"no pins self in top", L, "b", nil, 3, ids("a", "c", "d")},
		{"pins first then L", L, "a", ids("f", "d"), 3, ids("f", "d", "b")},
		{"pin already in top", L, "f", ids("b"), 3, ids("b", "a", "c")},
		{"pinned self ignored", L, "a", ids("a", "e"), 2, ids("e", "b")},
		{"pins beyond N keep first N", L, "a", ids("f", "e", "d", "c"), 2, ids("f", "e")},
		{"pins equal N", L, "a", ids("f", "e"), 2, ids("f", "e")},
		{"duplicate pins", L, "a", ids("f", "f", "e"), 3, ids("f", "e", "b")},
		{"unknown pins ignored", L, "a", ids("x", "f", "y"), 3, ids("f", "b", "c")},
		{"N=0", L, "a", ids("f"), 0, ids()},
		{"N=-1 unlimited", L, "c", nil, -1, ids("a", "b", "d", "e", "f")},
		{"N=-1 with pins", L, "c", ids("e"), -1, ids("e", "a", "b", "d", "f")},
		{"N = K-1", L, "a", nil, 5, ids("b", "c", "d", "e", "f")},
		{"N > K", L, "a", nil, 50, ids("b", "c", "d", "e", "f")},
		{"self unknown", L, "zz", nil, 2, ids("a", "b")},
		{"empty order", nil, "a", ids("b"), 3, ids()},
		{"alone", ids("a"), "a", nil, 3, ids()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Select(tt.order, tt.self, tt.pinned, tt.n)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Select(%v, %q, %v, %d) = %v, want %v", tt.order, tt.self, tt.pinned, tt.n, got, tt.want)
			}
		})
	}
}

func TestAppendSelectKeepsPrefix(t *testing.T) {
	dst := ids("keep")
	got := AppendSelect(dst, ids("a", "b", "keep"), "a", ids("keep"), 2)
	if want := ids("keep", "keep", "b"); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

func TestAppendSelectAllocs(t *testing.T) {
	order := make([]ID, 100)
	for i := range order {
		order[i] = ID(fmt.Sprint("p", i))
	}
	pins := []ID{"p70", "p3", "nope", "p99"}
	buf := make([]ID, 0, 8)
	allocs := testing.AllocsPerRun(100, func() {
		buf = AppendSelect(buf[:0], order, "p1", pins, 8)
	})
	if allocs != 0 {
		t.Fatalf("AppendSelect allocates %v times per call", allocs)
	}
}

// TestSelectProperties checks the Last N rules over random orders, pins and N.
func TestSelectProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 20000 {
		k := rng.IntN(12)
		universe := make([]ID, 15) // a few ids are never in the order
		for i := range universe {
			universe[i] = ID(fmt.Sprint(i))
		}
		rng.Shuffle(len(universe), func(i, j int) { universe[i], universe[j] = universe[j], universe[i] })
		order := universe[:k]
		self := universe[rng.IntN(len(universe))]
		var pinned []ID
		for range rng.IntN(6) {
			pinned = append(pinned, universe[rng.IntN(len(universe))])
		}
		n := rng.IntN(14) - 1

		got := Select(order, self, pinned, n)
		ctx := fmt.Sprintf("iter %d: Select(%v, %q, %v, %d) = %v", iter, order, self, pinned, n, got)

		limit := n
		if n < 0 {
			limit = len(order)
		}
		if len(got) > limit {
			t.Fatalf("%s: more than N", ctx)
		}
		if slices.Contains(got, self) {
			t.Fatalf("%s: contains self", ctx)
		}
		for i, id := range got {
			if !slices.Contains(order, id) {
				t.Fatalf("%s: %q not in L", ctx, id)
			}
			if slices.Contains(got[:i], id) {
				t.Fatalf("%s: %q twice", ctx, id)
			}
		}
		// Valid pins: in L, not self, first occurrence.
		var valid []ID
		for _, p := range pinned {
			if p != self && slices.Contains(order, p) && !slices.Contains(valid, p) {
				valid = append(valid, p)
			}
		}
		kept := min(len(valid), limit)
		if !slices.Equal(got[:kept], valid[:kept]) {
			t.Fatalf("%s: pins not first / not in given order (valid pins %v)", ctx, valid)
		}
		// The rest is exactly the first entries of L \ P \ {self}, in L order.
		var rest []ID
		for _, id := range order {
			if id != self && !slices.Contains(valid, id) {
				rest = append(rest, id)
			}
		}
		wantRest := rest[:min(len(rest), limit-kept)]
		if !slices.Equal(got[kept:], wantRest) {
			t.Fatalf("%s: rest = %v, want %v", ctx, got[kept:], wantRest)
		}
		// Size is as large as the rules allow.
		if want := min(limit, len(valid)+len(rest)); len(got) != want {
			t.Fatalf("%s: size %d, want %d", ctx, len(got), want)
		}
		// Deterministic, and the appending variant agrees.
		if again := AppendSelect(make([]ID, 0, 1), order, self, pinned, n); !slices.Equal(again, got) {
			t.Fatalf("%s: second call gave %v", ctx, again)
		}
	}
}

func BenchmarkAppendSelect(b *testing.B) {
	order := make([]ID, 50)
	for i := range order {
		order[i] = ID(fmt.Sprint("endpoint-", i))
	}
	pins := []ID{"endpoint-40", "endpoint-7"}
	buf := make([]ID, 0, 8)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendSelect(buf[:0], order, "endpoint-3", pins, 8)
	}
}
