package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// SFUCommand makes the command that runs the child server with the given
// `podium serve` flags; see ChildMain.
type SFUCommand func(args []string) *exec.Cmd

// SelfCommand runs this executable as `podium bench sfu ARGS`.
func SelfCommand(args []string) *exec.Cmd {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exec.Command(exe, append([]string{"bench", "sfu"}, args...)...)
}

// withProcs runs command's child with GOMAXPROCS=procs (unchanged when procs ≤ 0).
func withProcs(command SFUCommand, procs int) SFUCommand {
	if command == nil {
		command = SelfCommand
	}
	if procs <= 0 {
		return command
	}
	return func(args []string) *exec.Cmd {
		cmd := command(args)
		env := cmd.Env
		if env == nil {
			env = os.Environ()
		}
		cmd.Env = append(env, "GOMAXPROCS="+strconv.Itoa(procs))
		return cmd
	}
}

// SFU is a running child server.
type SFU struct {
	URL  string // signaling WebSocket
	PID  int
	Node string // cluster node id, when clustered

	piped
	mu sync.Mutex // one command at a time

	closeOnce sync.Once
}

// StartSFU starts the child server on loopback with free ports, plus extra flags.
func StartSFU(ctx context.Context, command SFUCommand, extra ...string) (*SFU, error) {
	if command == nil {
		command = SelfCommand
	}
	args := append([]string{
		"--http", "127.0.0.1:0", "--udp-port", "0", "--tcp-port", "0", "--media-ip", "127.0.0.1",
		// A benchmark joins many participants from one address, often.
		"--joins-per-ip", "0", "--max-participants", "0", "--signaling-rate", "0", "--max-conns-per-ip", "0",
	}, extra...)
	cmd := command(args)
	p, err := startPiped(cmd, "server")
	if err != nil {
		return nil, err
	}
	s := &SFU{piped: p}
	hello := make(chan error, 1)
	go func() {
		var h childHello
		if !s.out.Scan() {
			hello <- fmt.Errorf("the server exited before it was ready: %v", s.out.Err())
			return
		}
		if err := json.Unmarshal(s.out.Bytes(), &h); err != nil {
			hello <- fmt.Errorf("the server said %q: %w", s.out.Text(), err)
			return
		}
		s.URL, s.PID, s.Node = h.URL, h.PID, h.Node
		hello <- nil
	}()
	select {
	case err = <-hello:
	case <-ctx.Done():
		err = ctx.Err()
	case <-time.After(30 * time.Second):
		err = errors.New("the server did not start within 30 s")
	}
	if err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// command sends one command line and decodes the answer into v.
func (s *SFU) command(line string, v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	if !s.out.Scan() {
		return fmt.Errorf("server: no answer to %q: %v", line, s.out.Err())
	}
	var e struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(s.out.Bytes(), &e) == nil && e.Error != "" {
		return fmt.Errorf("server: %s", e.Error)
	}
	if v == nil {
		return nil
	}
	return json.Unmarshal(s.out.Bytes(), v)
}

// Sample is the server's counters and process figures at one moment.
type Sample struct {
	Stats ChildStats
	Proc  ProcStats
}

// Sample reads the server's counters and its /proc figures.
func (s *SFU) Sample() (Sample, error) {
	var out Sample
	if err := s.command("stats", &out.Stats); err != nil {
		return out, err
	}
	p, err := ReadProc(s.PID)
	out.Proc = p
	return out, err
}

// Meter reads only the server's forwarding counters (no memory statistics,
// which stop the world).
func (s *SFU) Meter() (ChildStats, error) {
	var out ChildStats
	err := s.command("meter", &out)
	return out, err
}

// StartProfile starts a CPU profile of the server into path.
func (s *SFU) StartProfile(path string) error { return s.command("cpuprofile "+path, nil) }

// StopProfile stops it.
func (s *SFU) StopProfile() error { return s.command("stopprofile", nil) }

// StartTrace starts a Go execution trace of the server into path.
func (s *SFU) StartTrace(path string) error { return s.command("trace "+path, nil) }

// StopTrace stops it.
func (s *SFU) StopTrace() error { return s.command("stoptrace", nil) }

// WaitCluster waits until the server's cluster is ready with n healthy nodes.
func (s *SFU) WaitCluster(n int) error { return s.command(fmt.Sprintf("cluster %d", n), nil) }

// HeapProfile writes a heap profile of the server into path.
func (s *SFU) HeapProfile(path string) error { return s.command("heapprofile "+path, nil) }

// Close stops the server and waits for it (killing it after 10 s); later
// calls do nothing.
func (s *SFU) Close() {
	s.closeOnce.Do(func() {
		_ = s.in.Close()
		select {
		case <-s.waited:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.waited
		}
	})
}
