package peer

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/pion/webrtc/v4"
)

// gather makes an offer on a publish-style connection and returns its candidates.
func gather(t *testing.T, e *Engine) []string {
	t.Helper()
	pc, err := e.NewSubscribePC()
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	if _, err := pc.AddTransceiverFromKind(webrtc.RTPCodecTypeAudio); err != nil {
		t.Fatal(err)
	}
	offer, err := pc.CreateOffer(nil)
	if err != nil {
		t.Fatal(err)
	}
	done := webrtc.GatheringCompletePromise(pc)
	if err := pc.SetLocalDescription(offer); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("gathering did not complete")
	}
	var cands []string
	for _, line := range strings.Split(pc.LocalDescription().SDP, "\n") {
		if strings.HasPrefix(line, "a=candidate:") {
			cands = append(cands, strings.TrimSpace(line))
		}
	}
	return cands
}

func freePort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}

func TestAllMediaOnOneUDPPort(t *testing.T) {
	port := freePort(t)
	e, err := NewEngine(Config{UDPPort: port, BindIPs: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for i := 0; i < 3; i++ { // every connection reuses the same port
		cands := gather(t, e)
		if len(cands) == 0 {
			t.Fatal("no candidates")
		}
		for _, c := range cands {
			if !strings.Contains(c, " 127.0.0.1 "+strconv.Itoa(port)+" typ host") {
				t.Errorf("candidate %q is not on 127.0.0.1:%d", c, port)
			}
		}
	}
}

func TestPublicIPAndTCPAreAnnounced(t *testing.T) {
	port := freePort(t)
	e, err := NewEngine(Config{UDPPort: port, TCPPort: port, BindIPs: []string{"127.0.0.1"}, PublicIPs: []string{"203.0.113.7"}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cands := strings.Join(gather(t, e), "\n")
	if !strings.Contains(cands, "udp") || !strings.Contains(cands, "203.0.113.7 "+strconv.Itoa(port)+" typ host") {
		t.Errorf("no UDP candidate with the public IP:\n%s", cands)
	}
	if !strings.Contains(cands, "tcp") || !strings.Contains(cands, "tcptype passive") {
		t.Errorf("no passive ICE-TCP candidate:\n%s", cands)
	}
	if strings.Contains(cands, " 127.0.0.1 ") {
		t.Errorf("local address leaked although a public IP is set:\n%s", cands)
	}
}

func TestPortInUseIsAClearError(t *testing.T) {
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	port := c.LocalAddr().(*net.UDPAddr).Port
	_, err = NewEngine(Config{UDPPort: port, BindIPs: []string{"127.0.0.1"}})
	if err == nil || !strings.Contains(err.Error(), "media UDP port") {
		t.Fatalf("err = %v, want a media UDP port error", err)
	}
}
