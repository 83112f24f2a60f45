package alloc

import (
	"testing"
	"time"
)

// A trace of a receiver beside downloads: the hold starts with a lossy window
// while competing, survives windows between the thresholds, and ends when
// competitive mode ends or after the loss stayed low for releaseAfter.
func TestLossHold(t *testing.T) {
	var h LossHold
	steps := []struct {
		at        time.Duration
		competing bool
		loss      float64
		want      bool
	}{
		{0, false, 0.09, false},                            // lossy without competing: random loss, not downloads
		{time.Second, true, 0.01, false},                   // competing, little loss
		{2 * time.Second, true, 0.05, true},                // a lossy window
		{3 * time.Second, true, 0.03, true},                // between the thresholds: kept
		{4 * time.Second, true, 0.01, true},                // calm starts
		{4*time.Second + releaseAfter/2, true, 0.03, true}, // not calm: starts over
		{5*time.Second + releaseAfter/2, true, 0.01, true},
		{5*time.Second + releaseAfter, true, 0.01, true},
		{5*time.Second + 3*releaseAfter/2, true, 0.015, false}, // calm for releaseAfter
		{20 * time.Second, true, 0.08, true},
		{21 * time.Second, false, 0.08, false}, // the flows stopped
	}
	for i, s := range steps {
		if got := h.Update(t0.Add(s.at), s.competing, s.loss); got != s.want {
			t.Fatalf("step %d (%v, competing %v, loss %.2f): held %v, want %v", i, s.at, s.competing, s.loss, got, s.want)
		}
	}
}

// A Lowest source gets only its lowest active encoding's steps, and is not
// raised above what the receiver shows.
func TestLowestSource(t *testing.T) {
	s := src("s", 0, stage)
	s.Lowest = true
	if e := s.WantedEncoding(); e != 0 {
		t.Fatalf("Lowest source wants encoding %d", e)
	}
	s.Layers[0].Active = false
	if e := s.WantedEncoding(); e != 1 {
		t.Fatalf("Lowest source without its first encoding wants %d, want 1", e)
	}
	a := New(DefaultConfig())
	for _, o := range a.Allocate(t0, 5_000_000, 40_000, []Source{s}) {
		if o.Encoding != 1 || o.MaxTemporal != MaxTemporal {
			t.Fatalf("Lowest source at a large budget: %+v, want encoding 1 at full frame rate", o)
		}
	}
	hidden := src("h", 1, stage)
	hidden.Want.Width, hidden.Want.Height = 0, 0
	plain := hidden.WantedEncoding()
	hidden.Lowest = true
	if e := hidden.WantedEncoding(); e != plain {
		t.Fatalf("Lowest changed a source the receiver does not show: %d, want %d", e, plain)
	}
}
