package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as the server child: StartSFU runs it again with
// PODIUM_BENCH_CHILD set, and TestMain then serves instead of testing.
func TestMain(m *testing.M) {
	if os.Getenv("PODIUM_BENCH_CHILD") == "floor" {
		if err := FloorChildMain(os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString("floor child: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("PODIUM_BENCH_CHILD") == "1" {
		if err := ChildMain(os.Args[1:], os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString("bench child: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func floorChildCommand() *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "PODIUM_BENCH_CHILD=floor")
	return cmd
}

func childCommand(args []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "PODIUM_BENCH_CHILD=1")
	return cmd
}

func TestChildAnswersCommands(t *testing.T) {
	sfu, err := StartSFU(context.Background(), childCommand)
	if err != nil {
		t.Fatal(err)
	}
	defer sfu.Close()
	if sfu.URL == "" || sfu.PID == 0 {
		t.Fatalf("hello: %q pid %d", sfu.URL, sfu.PID)
	}
	s, err := sfu.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if s.Stats.Mallocs == 0 || s.Proc.RSS == 0 || s.Stats.Goroutines == 0 {
		t.Errorf("empty sample: %+v", s)
	}
	if err := sfu.command("bogus", nil); err == nil {
		t.Error("an unknown command was accepted")
	}
	profile := t.TempDir() + "/cpu.pprof"
	if err := sfu.StartProfile(profile); err != nil {
		t.Fatal(err)
	}
	if err := sfu.StopProfile(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(profile); err != nil || fi.Size() == 0 {
		t.Errorf("profile not written: %v", err)
	}
	tr := t.TempDir() + "/server.trace"
	if err := sfu.StartTrace(tr); err != nil {
		t.Fatal(err)
	}
	if err := sfu.StartTrace(tr + "2"); err == nil {
		t.Error("a second trace started while one runs")
	}
	if err := sfu.StopTrace(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(tr); err != nil || !bytes.HasPrefix(b, []byte("go 1.")) {
		t.Errorf("trace not written (%d bytes, %v): want a Go execution trace", len(b), err)
	}
}

// ReadProc must read the process's own CPU time: after burning 200 ms of it,
// it agrees with getrusage(2) to within a few of the clock ticks /proc counts in.
func TestReadProcOfSelf(t *testing.T) {
	const burnt, tolerance = 200 * time.Millisecond, 5 * clockTick
	for x := 1; selfCPU(t) < burnt; {
		for range 1 << 20 {
			x = x*31 + 7
		}
		sink = x
	}
	p, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	want := selfCPU(t)
	if d := p.CPU() - want; d < -tolerance || d > tolerance {
		t.Errorf("ReadProc: CPU %v (user %v, system %v); getrusage says %v, want within %v", p.CPU(), p.User, p.System, want, tolerance)
	}
	if p.RSS == 0 || p.PeakRSS < p.RSS {
		t.Errorf("ReadProc: RSS %d, peak %d; want 0 < RSS <= peak", p.RSS, p.PeakRSS)
	}
	if p.AnonRSS == 0 || p.FileRSS == 0 {
		t.Errorf("ReadProc: RSS %d, of it anonymous %d and file %d; want both parts", p.RSS, p.AnonRSS, p.FileRSS)
	}
}

// selfCPU is this process's user + system time by getrusage(2).
func selfCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

var sink int

// The machine's CPU time and its steal come from /proc/stat's aggregate line;
// anything else is refused, not read as zero steal.
func TestParseHostCPU(t *testing.T) {
	for _, c := range []struct {
		name, stat string
		want       HostCPU
		ok         bool
	}{
		{"a kernel of today", "cpu  3686021 67134 685066 2811166 27770 0 35664 318012 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n",
			HostCPU{Busy: 3686021 + 67134 + 685066 + 35664 + 318012, Steal: 318012}, true},
		{"idle and iowait are not busy; guest time not counted twice", "cpu  10 1 10 80 3 2 4 5 7 9\n", HostCPU{Busy: 32, Steal: 5}, true},
		{"no steal field", "cpu  10 0 10 80 0 0 0\n", HostCPU{}, false},
		{"a per-CPU line first", "cpu0 10 0 10 80 0 0 0 5 0 0\n", HostCPU{}, false},
		{"not a number", "cpu  10 0 10 80 0 0 0 x 0 0\n", HostCPU{}, false},
		{"empty", "", HostCPU{}, false},
	} {
		got, err := parseHostCPU([]byte(c.stat))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v, ok %v", c.name, got, err, c.want, c.ok)
		}
	}
	if got := StealPercent(HostCPU{Busy: 1000, Steal: 10}, HostCPU{Busy: 1200, Steal: 50}); got != 20 {
		t.Errorf("40 of 200 busy ticks stolen: %v %%, want 20", got)
	}
	if got := StealPercent(HostCPU{Busy: 1200, Steal: 50}, HostCPU{Busy: 1000, Steal: 10}); got != 0 {
		t.Errorf("readings out of order: %v %%, want 0", got)
	}
}

// ReadProc carries the machine's CPU time of the same moment.
func TestReadProcReadsTheHost(t *testing.T) {
	p, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.Host.Busy == 0 {
		t.Errorf("ReadProc: no host CPU time: %+v", p.Host)
	}
}

// The longest pause is taken over the collections since the last reading,
// from the runtime's ring of the latest 256.
func TestPauseMaxSince(t *testing.T) {
	var ms runtime.MemStats
	ms.NumGC = 3
	ms.PauseNs[0], ms.PauseNs[1], ms.PauseNs[2] = 900, 100, 200 // GCs 1, 2, 3
	last := uint32(1)
	if got := pauseMaxSince(&ms, &last); got != 200 || last != 3 {
		t.Errorf("GCs 2 and 3: longest %d ns, last %d; want 200, 3", got, last)
	}
	if got := pauseMaxSince(&ms, &last); got != 0 {
		t.Errorf("no GC since: %d ns, want 0", got)
	}
	ms.NumGC = 3 + 300 // the ring went round: only its 256 are known
	for i := range ms.PauseNs {
		ms.PauseNs[i] = uint64(i)
	}
	if got := pauseMaxSince(&ms, &last); got != 255 || last != 303 {
		t.Errorf("300 GCs later: longest %d ns, last %d; want 255, 303", got, last)
	}
}
