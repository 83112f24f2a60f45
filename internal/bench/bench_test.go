package bench

import (
	"context"
	"os"
	"os/exec"
	"testing"
)

// The test binary doubles as the server child: StartSFU runs it again with
// PODIUM_BENCH_CHILD set, and TestMain then serves instead of testing.
func TestMain(m *testing.M) {
	if os.Getenv("PODIUM_BENCH_CHILD") == "1" {
		if err := ChildMain(os.Args[1:], os.Stdin, os.Stdout); err != nil {
			os.Stderr.WriteString("bench child: " + err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
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
}

func TestReadProcOfSelf(t *testing.T) {
	p, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if p.RSS == 0 || p.PeakRSS < p.RSS || p.CPU() < 0 {
		t.Errorf("%+v", p)
	}
}
