package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/config"
	"github.com/podium-sfu/podium/internal/signal"
)

func TestNodeURL(t *testing.T) {
	out := outgoingIP().String()
	for _, tc := range []struct {
		publicURL string
		publicIPs []string
		listen    string
		want      string
	}{
		{"", nil, "http://127.0.0.1:7880/", "http://127.0.0.1:7880/"},
		{"", []string{"203.0.113.7"}, "http://10.0.0.2:7880/", "http://10.0.0.2:7880/"},
		{"", []string{"203.0.113.7"}, "https://[::]:7880/", "https://203.0.113.7:7880/"},
		{"", []string{"203.0.113.7/10.0.0.2", "198.51.100.1"}, "http://0.0.0.0:7880/", "http://203.0.113.7:7880/"},
		{"", nil, "http://[::]:7880/", "http://" + net.JoinHostPort(out, "7880") + "/"},
		{"https://eu1.example.com", nil, "https://[::]:443/", "https://eu1.example.com/"},
		{"https://example.com/podium", []string{"203.0.113.7"}, "https://127.0.0.1:7880/", "https://example.com/podium/"},
	} {
		cfg := config.Default()
		cfg.PublicURL, cfg.PublicIPs = tc.publicURL, tc.publicIPs
		if got := nodeURL(cfg, tc.listen); got != tc.want {
			t.Errorf("public-url %q, public-ip %v, listening at %s: %s, want %s", tc.publicURL, tc.publicIPs, tc.listen, got, tc.want)
		}
	}
}

// A node with --public-url is named by it in the cluster: a redirect to it
// carries that URL, which the client can follow, and the other node lets a
// page served from it open its WebSocket. Here the public name is
// localhost: without --public-url the redirect would say 127.0.0.1, and a
// wildcard --http would put 0.0.0.0 or [::] there, the browser's own machine.
func TestRedirectNamesThePublicURL(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	public := fmt.Sprintf("http://localhost:%d", port)
	nodes := startClusterConfigured(t, func(int, *Options) {}, func(i int, c *config.Config) {
		if i == 1 {
			c.HTTP, c.PublicURL = fmt.Sprintf("127.0.0.1:%d", port), public
		}
	}, "eu", "us")
	awaitRegistries(t, 15*time.Second, nodes...)

	typ, frame := joinProbe(t, wsURL(nodes[0])+"?region=us", "public", "Ann")
	var rd signal.Redirect
	if err := json.Unmarshal(frame, &rd); typ != signal.TypeRedirect || err != nil {
		t.Fatalf("Ann (us) at the eu node got %s %s; want a redirect to the us node", typ, frame)
	}
	u, err := url.Parse(rd.URL)
	if err != nil || u.Scheme != "ws" || u.Host != fmt.Sprintf("localhost:%d", port) || u.Path != "/ws" {
		t.Fatalf("redirect to %s, want ws://localhost:%d/ws", rd.URL, port)
	}
	ann := dialURL(t, rd.URL, "public", "Ann")
	if id := ann.Snapshot().ID; id == "" {
		t.Fatal("Ann, redirected, has no participant id")
	}

	// node0 trusts pages from node1's public origin (a fallback's page opening
	// node0's WebSocket), and its CSP lets a page connect there.
	resp, err := http.Get(nodes[0].URL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, fmt.Sprintf("ws://localhost:%d", port)) {
		t.Errorf("node0's CSP does not let a page connect to node1's public URL: %s", csp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, wsURL(nodes[0]), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {public}}})
	if err != nil {
		t.Fatalf("node0 refuses a WebSocket from node1's public origin %s: %v", public, err)
	}
	conn.CloseNow()

	// node0 has no public URL: the cluster names it 127.0.0.1:port, and a
	// page opened at localhost:port is the same node's. node1 admits it.
	alias := "http://localhost:" + strings.TrimSuffix(strings.TrimPrefix(nodes[0].URL(), "http://127.0.0.1:"), "/")
	conn, _, err = websocket.Dial(ctx, wsURL(nodes[1]), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {alias}}})
	if err != nil {
		t.Fatalf("node1 refuses a WebSocket from node0's page opened at %s: %v", alias, err)
	}
	conn.CloseNow()
	// Another port on the loopback is no node's.
	other := fmt.Sprintf("http://localhost:%d", port+1)
	if other == alias {
		other = fmt.Sprintf("http://localhost:%d", port+2)
	}
	if conn, _, err = websocket.Dial(ctx, wsURL(nodes[1]), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {other}}}); err == nil {
		conn.CloseNow()
		t.Fatalf("node1 admits a WebSocket from %s, no node's page", other)
	}
}
