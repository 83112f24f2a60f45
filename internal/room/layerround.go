package room

import (
	"github.com/podium-sfu/podium/internal/algo/alloc"
	"github.com/podium-sfu/podium/internal/algo/layers"
	"github.com/podium-sfu/podium/internal/forward"
)

// layerRound is scratch that maintainLayers and allocate reuse on every round,
// so that a round in steady state allocates nothing (they run every
// layersInterval for every member and source). The room loop is its one owner;
// nothing in it outlives a round: what is kept is copied out.
type layerRound struct {
	downs     map[string]*forward.DownTrack // one member's video DownTracks (videoDowns)
	needed    map[string][]bool             // publisher → encodings someone needs
	marks     []bool                        // backing of needed's slices
	encs      []layers.Encoding             // one publisher's encodings
	all       []layers.Encoding             // the same, all counted active
	active    []string                      // one publisher's RIDs to keep on
	sources   []alloc.Source                // one receiver's videos for the allocator
	allocs    []alloc.Layer                 // backing of sources' Layers
	allocEncs []layers.Encoding             // one publisher's encodings, for allocLayers
	seen      map[string]bool               // sources the allocator placed
	suspended []string                      // of them, those suspended
}

// mark is a zeroed slice of n marks, valid until the next round.
func (lr *layerRound) mark(n int) []bool {
	start := len(lr.marks)
	lr.marks = append(lr.marks, make([]bool, n)...)
	return lr.marks[start : start+n : start+n]
}
