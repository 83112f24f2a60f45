package web

import (
	"io"
	"net"
	"testing"
	"time"
)

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }

func TestAddressKeyGroupsIPv6By64(t *testing.T) {
	a, b := addressKey(fakeAddr("[2001:db8:1:2::a]:5000")), addressKey(fakeAddr("[2001:db8:1:2:ffff::1]:6000"))
	if a != b {
		t.Errorf("one /64, two keys: %s %s", a, b)
	}
	if addressKey(fakeAddr("[2001:db8:1:3::a]:5000")) == a {
		t.Error("another /64 shares the key")
	}
	if addressKey(fakeAddr("192.0.2.1:1")) == addressKey(fakeAddr("192.0.2.2:1")) {
		t.Error("two IPv4 addresses share a key")
	}
}

// TestLimitConnsPerAddress: beyond the cap a connection is closed at once; a
// closed one frees its slot.
func TestLimitConnsPerAddress(t *testing.T) {
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitConns(raw, 2)
	defer ln.Close()
	accepted := make(chan net.Conn, 10)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", raw.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	closedByServer := func(c net.Conn) bool {
		_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF || (err != nil && !isTimeout(err))
	}
	a, b := dial(), dial()
	sa, sb := <-accepted, <-accepted
	third := dial()
	if !closedByServer(third) {
		t.Error("a third connection from one address stayed open")
	}
	if closedByServer(a) || closedByServer(b) {
		t.Error("connections within the cap were closed")
	}
	_ = sa.Close()
	_ = sa.Close() // a second Close must not free a second slot
	dial()
	<-accepted
	if c := dial(); !closedByServer(c) {
		t.Error("after one close, two new connections were both accepted")
	}
	_ = sb
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}
