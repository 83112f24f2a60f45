package limit

import (
	"fmt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestBucketBurstThenRate(t *testing.T) {
	b := NewBucket(10, 5) // 10/s, burst 5
	for i := range 5 {
		if !b.Allow(t0) {
			t.Fatalf("burst event %d refused", i)
		}
	}
	if b.Allow(t0) {
		t.Fatal("sixth event at once allowed")
	}
	if b.Allow(t0.Add(50 * time.Millisecond)) {
		t.Fatal("half a token allowed")
	}
	if !b.Allow(t0.Add(100 * time.Millisecond)) {
		t.Fatal("refilled token refused")
	}
	// A long pause refills to the burst, never beyond.
	later := t0.Add(time.Hour)
	n := 0
	for b.Allow(later) {
		n++
	}
	if n != 5 {
		t.Errorf("after an hour %d events allowed, want the burst of 5", n)
	}
	// Time going backwards neither refills nor breaks it.
	if b.Allow(t0) {
		t.Error("allowed after the clock went back")
	}
}

func TestBucketSustainedRate(t *testing.T) {
	b := NewBucket(20, 1)
	allowed := 0
	for i := range 1000 { // 1000 attempts over 10 s, every 10 ms
		if b.Allow(t0.Add(time.Duration(i) * 10 * time.Millisecond)) {
			allowed++
		}
	}
	if allowed < 195 || allowed > 205 {
		t.Errorf("%d allowed in 10 s at 20/s", allowed)
	}
}

func TestBucketUnlimitedAndZero(t *testing.T) {
	u := NewBucket(0, 1)
	for range 1000 {
		if !u.Allow(t0) {
			t.Fatal("rate 0 is unlimited")
		}
	}
	var z Bucket
	if z.Allow(t0) {
		t.Error("zero bucket allowed")
	}
}

func TestPerKey(t *testing.T) {
	p := PerMinute(3)
	for i := range 3 {
		if !p.Allow("198.51.100.1", t0) {
			t.Fatalf("join %d refused", i)
		}
	}
	if p.Allow("198.51.100.1", t0.Add(time.Second)) {
		t.Error("fourth join within a minute allowed")
	}
	if !p.Allow("198.51.100.2", t0) {
		t.Error("another address refused")
	}
	if !p.Allow("198.51.100.1", t0.Add(20*time.Second)) {
		t.Error("one join per 20 s refused")
	}
	// Idle keys are forgotten.
	for i := range 100 {
		p.Allow(fmt.Sprint("203.0.113.", i), t0.Add(30*time.Second))
	}
	p.Allow("x", t0.Add(10*time.Minute))
	if n := p.Len(); n != 1 {
		t.Errorf("%d keys remembered after 10 idle minutes, want 1", n)
	}
	var off *PerKey
	if !off.Allow("a", t0) || !PerMinute(0).Allow("a", t0) {
		t.Error("disabled limiter refused")
	}
}

func TestAddressKey(t *testing.T) {
	for addr, want := range map[string]string{
		"198.51.100.7":         "198.51.100.7",
		"2001:db8:1:2:3:4:5:6": "2001:db8:1:2::/64",
		"2001:db8:1:2:ffff::1": "2001:db8:1:2::/64",
		"::ffff:198.51.100.7":  "::ffff:198.51.100.7", // IPv4-mapped: the IPv4 address
		"not an address":       "not an address",
	} {
		if got := AddressKey(addr); got != want {
			t.Errorf("AddressKey(%s) = %s, want %s", addr, got, want)
		}
	}
}
