package lastn

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestNeeded(t *testing.T) {
	L := ids("a", "b", "c", "d", "e")
	tests := []struct {
		name string
		sels [][]ID
		want []ID
	}{
		{"none", nil, nil},
		{"union in L order", [][]ID{ids("d", "a"), ids("b")}, ids("a", "b", "d")},
		{"unknown ignored", [][]ID{ids("zz", "c")}, ids("c")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Needed(L, tt.sels); !slices.Equal(got, tt.want) {
				t.Fatalf("Needed = %v, want %v", got, tt.want)
			}
		})
	}
}

// With K senders (all also receivers), no pins and N, everything after
// position N+1 of L is unneeded: K−N−1 senders paused (thesis 4.3).
func TestNeededPausedCount(t *testing.T) {
	for k := 1; k <= 30; k++ {
		order := make([]ID, k)
		for i := range order {
			order[i] = ID(fmt.Sprint("e", i))
		}
		for n := 0; n <= 32; n++ {
			sels := make([][]ID, k)
			for i, self := range order {
				sels[i] = Select(order, self, nil, n)
			}
			needed := Needed(order, sels)
			paused := k - len(needed)
			want := max(0, k-n-1)
			if n == 0 || k == 1 {
				want = k // nobody receives video, or nobody else is there
			}
			if paused != want {
				t.Fatalf("K=%d N=%d: %d paused, want %d", k, n, paused, want)
			}
			if n > 0 && k > 1 && !slices.Equal(needed, order[:min(k, n+1)]) {
				t.Fatalf("K=%d N=%d: needed %v, want the first N+1 of L", k, n, needed)
			}
		}
	}
}

// With pins, a sender is needed iff some receiver selects it; check against
// a direct computation over random conferences.
func TestNeededProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 2000 {
		k := 1 + rng.IntN(10)
		order := make([]ID, k)
		for i := range order {
			order[i] = ID(fmt.Sprint(i))
		}
		rng.Shuffle(k, func(i, j int) { order[i], order[j] = order[j], order[i] })
		n := rng.IntN(k + 1)
		sels := make([][]ID, k)
		for i, self := range order {
			var pins []ID
			for range rng.IntN(3) {
				pins = append(pins, order[rng.IntN(k)])
			}
			sels[i] = Select(order, self, pins, n)
		}
		needed := Needed(order, sels)
		for _, id := range order {
			watched := false
			for _, s := range sels {
				watched = watched || slices.Contains(s, id)
			}
			if watched != slices.Contains(needed, id) {
				t.Fatalf("order %v sels %v: needed %v wrong for %q", order, sels, needed, id)
			}
		}
	}
}
