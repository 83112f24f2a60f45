// Command podium is the Podium video conferencing server.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
)

const usage = `podium — self-hosted video conferencing with a selective forwarding unit

Usage:
  podium serve [flags]    run the server (podium serve -h lists every setting)
  podium token [flags]    mint an access token for a room (podium token -h)
  podium load [flags]     synthetic participants against a server (podium load -h)
  podium bench forward|floor|lastn|cascade|wan [flags]
                          benchmarks: forwarding cost and its floor, the Last N experiments,
                          cascaded bridges (podium bench -h)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		exit("podium:", serve(os.Args[2:]))
	case "load":
		exit("podium load:", loadCommand(os.Args[2:]))
	case "bench":
		exit("podium bench:", benchCommand(os.Args[2:]))
	case "token":
		exit("podium token:", tokenCommand(os.Args[2:]))
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "podium: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}

// exit ends the process after a command: status 1 for an error, 0 for none
// and for -h/--help (the flag package has printed the usage).
func exit(prefix string, err error) {
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	default:
		fmt.Fprintln(os.Stderr, prefix, err)
		os.Exit(1)
	}
}
