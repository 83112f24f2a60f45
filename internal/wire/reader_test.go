package wire

import (
	"bytes"
	"errors"
	"net"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

func newReader(tb testing.TB, c *net.UDPConn) *Reader {
	tb.Helper()
	r, err := NewReader(c, false)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// waitQueued gives loopback datagrams just sent time to reach the socket.
func waitQueued() { time.Sleep(20 * time.Millisecond) }

// next reads one datagram with a deadline, so a reader that lost one fails
// the test instead of hanging it.
func next(tb testing.TB, c *net.UDPConn, r *Reader) ([]byte, netip.AddrPort) {
	tb.Helper()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _, from, err := r.Next()
	if err != nil {
		tb.Fatal(err)
	}
	return b, from
}

func TestReaderReturnsEachDatagramInOrderFromItsSender(t *testing.T) {
	sock, from := listen(t), listen(t)
	r := newReader(t, sock)
	var sent [][]byte
	for i := range 40 {
		p := bytes.Repeat([]byte{byte(i)}, 1+i*37)
		sent = append(sent, p)
		if _, err := from.WriteToUDPAddrPort(p, addrOf(sock)); err != nil {
			t.Fatal(err)
		}
	}
	waitQueued()
	for i, want := range sent {
		got, sender := next(t, sock, r)
		if !bytes.Equal(got, want) {
			t.Fatalf("datagram %d: %d bytes, want %d", i, len(got), len(want))
		}
		if sender != addrOf(from) {
			t.Fatalf("datagram %d from %v, want %v", i, sender, addrOf(from))
		}
	}
	if r.Pending() != 0 {
		t.Errorf("%d pending after every datagram was read", r.Pending())
	}
	if runtime.GOOS == "linux" && r.Calls != 1 {
		t.Errorf("%d system calls for 40 queued datagrams, want 1 (recvmmsg)", r.Calls)
	}
}

func TestReaderReadsAtMostItsSlotsPerCall(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("one datagram per read here")
	}
	sock, from := listen(t), listen(t)
	r := newReader(t, sock)
	for i := range ReadSlots + 5 {
		_, _ = from.WriteToUDPAddrPort([]byte{byte(i)}, addrOf(sock))
	}
	waitQueued()
	for i := range ReadSlots + 5 {
		if got, _ := next(t, sock, r); len(got) != 1 || got[0] != byte(i) {
			t.Fatalf("datagram %d is %v", i, got)
		}
		if i == 0 && r.Pending() != ReadSlots-1 {
			t.Fatalf("the first call left %d pending, want %d", r.Pending(), ReadSlots-1)
		}
	}
	if r.Calls != 2 {
		t.Errorf("%d calls, want 2", r.Calls)
	}
}

func TestReaderDropsADatagramLongerThanASlot(t *testing.T) {
	sock, from := listen(t), listen(t)
	r := newReader(t, sock)
	_, _ = from.WriteToUDPAddrPort([]byte("before"), addrOf(sock))
	_, _ = from.WriteToUDPAddrPort(make([]byte, ReadSlotSize+1), addrOf(sock))
	_, _ = from.WriteToUDPAddrPort([]byte("after"), addrOf(sock))
	waitQueued()
	for _, want := range []string{"before", "after"} {
		if got, _ := next(t, sock, r); string(got) != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	if runtime.GOOS == "linux" && r.Truncated != 1 {
		t.Errorf("truncated %d, want 1", r.Truncated)
	}
}

func TestReaderNamesIPv6Senders(t *testing.T) {
	sock, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Skip("no IPv6 loopback:", err)
	}
	defer sock.Close()
	from, err := net.ListenUDP("udp6", &net.UDPAddr{IP: net.IPv6loopback})
	if err != nil {
		t.Fatal(err)
	}
	defer from.Close()
	r := newReader(t, sock)
	_, _ = from.WriteToUDPAddrPort([]byte("six"), addrOf(sock))
	got, sender := next(t, sock, r)
	if string(got) != "six" || sender != addrOf(from) {
		t.Fatalf("got %q from %v, want \"six\" from %v", got, sender, addrOf(from))
	}
}

func TestReaderEndsWhenTheSocketCloses(t *testing.T) {
	sock := listen(t)
	r := newReader(t, sock)
	done := make(chan error, 1)
	go func() { _, _, _, err := r.Next(); done <- err }()
	time.Sleep(20 * time.Millisecond)
	_ = sock.Close()
	select {
	case err := <-done:
		if !errors.Is(err, net.ErrClosed) {
			t.Fatalf("Next returned %v, want net.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next still waiting after Close")
	}
}

func TestReaderDoesNotAllocate(t *testing.T) {
	sock, from := listen(t), listen(t)
	r := newReader(t, sock)
	p := make([]byte, 1200)
	to := addrOf(sock)
	allocs := testing.AllocsPerRun(500, func() {
		for range 4 {
			_, _ = from.WriteToUDPAddrPort(p, to)
		}
		for range 4 {
			if _, _, _, err := r.Next(); err != nil {
				t.Fatal(err)
			}
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per 4 datagrams, want 0", allocs)
	}
}

// FuzzReader: whatever datagrams a peer sends come out of the reader byte for
// byte, in order (the longest, cut at the slot, dropped), with its address.
func FuzzReader(f *testing.F) {
	f.Add([]byte{3, 'a', 'b', 'c', 0, 1, 'x'}, uint16(0))
	f.Add(bytes.Repeat([]byte{200}, 900), uint16(2100))
	f.Add([]byte{}, uint16(1))
	sock, from := listen(f), listen(f)
	r := newReader(f, sock)
	f.Fuzz(func(t *testing.T, data []byte, long uint16) {
		// data is a list of length-prefixed datagrams; long, when over a
		// slot, adds one datagram of that length after the first.
		var sent [][]byte
		for len(data) > 0 {
			n := min(int(data[0]), len(data)-1)
			sent = append(sent, data[1:1+n])
			data = data[1+n:]
			if len(sent) == ReadSlots/2 {
				break
			}
		}
		for i, p := range sent {
			if _, err := from.WriteToUDPAddrPort(p, addrOf(sock)); err != nil {
				t.Fatal(err)
			}
			if i == 0 && int(long) > ReadSlotSize {
				_, _ = from.WriteToUDPAddrPort(make([]byte, long), addrOf(sock))
			}
		}
		_, _ = from.WriteToUDPAddrPort([]byte("end"), addrOf(sock))
		for i, want := range append(sent, []byte("end")) {
			got, sender := next(t, sock, r)
			if !bytes.Equal(got, want) || sender != addrOf(from) {
				t.Fatalf("datagram %d: %x from %v, want %x from %v", i, got, sender, want, addrOf(from))
			}
		}
	})
}
