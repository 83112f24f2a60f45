package session

import (
	"testing"
	"time"

	"github.com/podium-sfu/podium/internal/signal"
)

func TestRateGuard(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	g := newRateGuard(10, 5)
	for i := range 5 {
		if ok, pe := g.check(t0); !ok || pe != nil {
			t.Fatalf("burst message %d: %v %v", i, ok, pe)
		}
	}
	// Over the rate: the first drop is reported, the next ones are silent...
	if ok, pe := g.check(t0); ok || pe == nil || pe.Code != signal.CodeRateLimited || pe.Fatal {
		t.Fatalf("first drop: %v %+v", ok, pe)
	}
	for i := range 4 {
		if ok, pe := g.check(t0); ok || pe != nil {
			t.Fatalf("drop %d: %v %+v", i+2, ok, pe)
		}
	}
	// ... until a whole burst was dropped: then the connection is closed.
	if ok, pe := g.check(t0); ok || pe == nil || !pe.Fatal {
		t.Fatalf("flooding: %v %+v", ok, pe)
	}
	// A client that slows down is served again and its count starts afresh.
	g = newRateGuard(10, 5)
	for range 5 {
		g.check(t0)
	}
	if ok, _ := g.check(t0); ok {
		t.Fatal("sixth at once allowed")
	}
	if ok, _ := g.check(t0.Add(100 * time.Millisecond)); !ok {
		t.Fatal("refilled token refused")
	}
	if ok, pe := g.check(t0.Add(100 * time.Millisecond)); ok || pe == nil || pe.Fatal {
		t.Fatalf("a new run of drops is reported again: %v %+v", ok, pe)
	}
	// Rate 0 is unlimited.
	u := newRateGuard(0, 0)
	for range 1000 {
		if ok, _ := u.check(t0); !ok {
			t.Fatal("unlimited guard dropped")
		}
	}
}
