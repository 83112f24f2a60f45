package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/podium-sfu/podium/internal/auth"
	"github.com/podium-sfu/podium/internal/server"
	"github.com/podium-sfu/podium/internal/signal"
)

// TestMain runs the command itself when the test binary is started as a helper
// process (PODIUM_TEST_MAIN=1): the tests below check exit codes and signals on
// a real process.
func TestMain(m *testing.M) {
	if os.Getenv("PODIUM_TEST_MAIN") == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const testSecret = "0123456789abcdef0123456789abcdef"

// command starts the podium command as a process; stderr is collected.
func command(t *testing.T, args ...string) (*exec.Cmd, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "PODIUM_TEST_MAIN=1")
	var stderr syncBuffer
	cmd.Stderr = &stderr
	return cmd, &stderr
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeRefusesNonLoopbackWithoutKeys: bound to all interfaces without keys,
// podium serve exits 1 with a message naming auth-keys and dev; with --dev it starts.
func TestServeRefusesNonLoopbackWithoutKeys(t *testing.T) {
	cmd, stderr := command(t, "serve", "--http", "0.0.0.0:0", "--udp-port", "0", "--tcp-port", "0")
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit: %v, want status 1; stderr:\n%s", err, stderr)
	}
	if msg := stderr.String(); !strings.Contains(msg, "auth-keys") || !strings.Contains(msg, "dev") || !strings.Contains(msg, "0.0.0.0:0") {
		t.Errorf("message does not explain: %s", msg)
	}

	e, out := testEnv()
	started := make(chan *server.Server, 1)
	e.ready = func(s *server.Server) { started <- s }
	sig := make(chan os.Signal, 1)
	e.signals = sig
	done := make(chan error, 1)
	go func() {
		done <- runServe([]string{"--http", "0.0.0.0:0", "--dev", "--udp-port", "0", "--tcp-port", "0", "--media-ip", "127.0.0.1", "--drain-timeout", "0s"}, e)
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("--dev on all interfaces did not start: %v", err)
	}
	if !strings.Contains(out.String(), "DEV MODE") {
		t.Errorf("dev mode not announced loudly:\n%s", out)
	}
	sig <- syscall.SIGTERM
	if err := <-done; err != nil {
		t.Errorf("serve after SIGTERM: %v", err)
	}
}

func testEnv() (env, *syncBuffer) {
	var out syncBuffer
	return env{getenv: func(string) string { return "" }, stdout: &out, stderr: &out}, &out
}

// TestDevModeDefaultOnLoopback: the README's run command (loopback, no keys)
// is dev mode and says so; with keys it is not.
func TestDevModeDefaultOnLoopback(t *testing.T) {
	for _, tt := range []struct {
		args []string
		dev  bool
	}{
		{[]string{"--http", "127.0.0.1:0"}, true},
		{[]string{"--http", "127.0.0.1:0", "--auth-keys", "k1:" + testSecret}, false},
	} {
		e, out := testEnv()
		sig := make(chan os.Signal, 1)
		e.signals = sig
		e.ready = func(*server.Server) { sig <- syscall.SIGTERM }
		args := append(tt.args, "--udp-port", "0", "--tcp-port", "0", "--media-ip", "127.0.0.1")
		if err := runServe(args, e); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(out.String(), "DEV MODE: access control is OFF"); got != tt.dev {
			t.Errorf("%v: dev-mode banner %v, want %v:\n%s", tt.args, got, tt.dev, out)
		}
	}
}

func TestPrintConfigMasksSecrets(t *testing.T) {
	e, out := testEnv()
	if err := runServe([]string{"--print-config", "--http", "0.0.0.0:443", "--auth-keys", "main:" + testSecret}, e); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Contains(s, testSecret) || !strings.Contains(s, "main:********") || !strings.Contains(s, "http: 0.0.0.0:443") {
		t.Errorf("print-config:\n%s", s)
	}
	// Invalid configurations are printed, then refused.
	e, out = testEnv()
	err := runServe([]string{"--print-config", "--http", "0.0.0.0:443"}, e)
	if err == nil || !strings.Contains(out.String(), "http: 0.0.0.0:443") {
		t.Errorf("invalid: %v\n%s", err, out)
	}
}

func TestTokenCommand(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	getenv := func(k string) string {
		if k == "PODIUM_AUTH_KEYS" {
			return "old:" + testSecret + "-old,new:" + testSecret
		}
		return ""
	}
	var stdout, stderr strings.Builder
	err := runToken([]string{"--room", "standup", "--identity", "alice", "--name", "Alice", "--perms", "subscribe",
		"--ttl", "1h", "--key", "new", "--url", "https://meet.example.org/", "--region", "eu-west"}, getenv, &stdout, &stderr, now)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 || lines[1] != "https://meet.example.org/standup?name=Alice&token="+lines[0] {
		t.Fatalf("output %q", stdout.String())
	}
	v, _ := auth.NewVerifier([]auth.Key{{ID: "new", Secret: []byte(testSecret)}})
	c, err := v.Verify(lines[0], now)
	if err != nil {
		t.Fatal(err)
	}
	if c.Room != "standup" || c.Identity != "alice" || c.Name != "Alice" || c.Permissions != (auth.Permissions{Subscribe: true}) ||
		!c.Expires.Equal(now.Add(time.Hour)) || c.KeyID != "new" || c.Region != "eu-west" {
		t.Errorf("claims %+v", c)
	}
	for _, bad := range [][]string{
		{"--identity", "x"}, // no room
		{"--room", "a/b"},
		{"--room", "r", "--perms", "root"},
		{"--room", "r", "--ttl", "-1h"},
		{"--room", "r", "--key", "missing"},
		{"--room", "r", "--region", "eu west"},
		{"--room", "*", "--url", "https://x/"},
	} {
		if err := runToken(bad, getenv, io.Discard, io.Discard, now); err == nil {
			t.Errorf("podium token %v succeeded", bad)
		}
	}
	if err := runToken([]string{"--room", "r"}, func(string) string { return "" }, io.Discard, io.Discard, now); err == nil || !strings.Contains(err.Error(), "auth-keys") {
		t.Errorf("without keys: %v", err)
	}
}

// TestSIGTERMDrainsAndExitsZero runs the real command: on SIGTERM /readyz turns
// 503 "draining", a joined participant is told (draining), new joins are
// refused, and after --drain-timeout the participant gets a bye and the
// process exits with status 0.
func TestSIGTERMDrainsAndExitsZero(t *testing.T) {
	cmd, stderr := command(t, "serve", "--http", "127.0.0.1:0", "--udp-port", "0", "--tcp-port", "0", "--media-ip", "127.0.0.1",
		"--drain-timeout", "2s", "--log-json")
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	base := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var line struct {
				Msg string `json:"msg"`
				URL string `json:"url"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "podium is running" {
				base <- line.URL
			}
		}
	}()
	var url string
	select {
	case url = <-base:
	case <-time.After(30 * time.Second):
		t.Fatalf("server did not start:\n%s", stderr)
	}
	ws := "ws" + strings.TrimPrefix(url, "http") + "ws"
	if code, body := get(t, url+"readyz"); code != 200 || body != "ready\n" {
		t.Fatalf("/readyz before SIGTERM: %d %q", code, body)
	}
	c := joinWS(t, ws, "drainroom", "Ann")
	c.expect(t, signal.TypeWelcome, "")

	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	c.expect(t, signal.TypeDraining, `"seconds":2`)
	if code, body := get(t, url+"readyz"); code != http.StatusServiceUnavailable || body != "draining\n" {
		t.Errorf("/readyz while draining: %d %q", code, body)
	}
	late := joinWS(t, ws, "drainroom", "Late")
	late.expect(t, signal.TypeError, `"code":"draining"`)
	c.expect(t, signal.TypeBye, `"code":"shutdown"`)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v; stderr:\n%s", err, stderr)
	}
	if took := time.Since(start); took < 1500*time.Millisecond || took > 15*time.Second {
		t.Errorf("drained in %v with --drain-timeout 2s", took)
	}
	if !strings.Contains(stderr.String(), "drain timeout") {
		t.Errorf("log does not say the drain timed out:\n%s", stderr)
	}
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type wsClient struct {
	conn *websocket.Conn
	msgs chan []byte
}

func joinWS(t *testing.T, url, room, name string) *wsClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.CloseNow() })
	c := &wsClient{conn: conn, msgs: make(chan []byte, 64)}
	go func() {
		defer close(c.msgs)
		for {
			_, b, err := conn.Read(context.Background())
			if err != nil {
				return
			}
			c.msgs <- b
		}
	}()
	frame := fmt.Sprintf(`{"type":"join","version":1,"room":%q,"name":%q}`, room, name)
	if err := conn.Write(ctx, websocket.MessageText, []byte(frame)); err != nil {
		t.Fatal(err)
	}
	return c
}

// expect skips messages until one of type typ containing want arrives.
func (c *wsClient) expect(t *testing.T, typ, want string) {
	t.Helper()
	timeout := time.After(15 * time.Second)
	for {
		select {
		case b, ok := <-c.msgs:
			if !ok {
				t.Fatalf("connection closed waiting for %s", typ)
			}
			if strings.Contains(string(b), `"type":"`+typ+`"`) && strings.Contains(string(b), want) {
				return
			}
		case <-timeout:
			t.Fatalf("no %s %s", typ, want)
		}
	}
}
