package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// piped is a child process driven line by line: commands on its stdin, one
// JSON line per answer on its stdout; its stderr is ours. Both the SFU and the
// floor forwarder run so.
type piped struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Scanner
	waited chan error // the child's exit, once
}

// startPiped starts cmd (what names it in errors) with its pipes.
func startPiped(cmd *exec.Cmd, what string) (piped, error) {
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return piped{}, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return piped{}, err
	}
	if err := cmd.Start(); err != nil {
		return piped{}, fmt.Errorf("start the %s: %w", what, err)
	}
	p := piped{cmd: cmd, in: in, out: bufio.NewScanner(outPipe), waited: make(chan error, 1)}
	p.out.Buffer(make([]byte, 64<<10), 4<<20)
	go func() { p.waited <- cmd.Wait() }()
	return p, nil
}
