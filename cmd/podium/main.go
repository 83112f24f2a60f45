// Command podium is the Podium video conferencing server.
package main

import (
	"fmt"
	"os"
)

const usage = `podium — self-hosted video conferencing with a selective forwarding unit

Usage:
  podium serve [flags]    run the server (podium serve -h lists every setting)
  podium token [flags]    mint an access token for a room (podium token -h)
  podium load [flags]     synthetic participants against a server (podium load -h)
  podium bench forward|lastn [flags]
                          benchmarks: forwarding cost, the Last N experiments (podium bench -h)
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "serve":
		if err := serve(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "podium:", err)
			os.Exit(1)
		}
	case "load":
		if err := loadCommand(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "podium load:", err)
			os.Exit(1)
		}
	case "bench":
		if err := benchCommand(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "podium bench:", err)
			os.Exit(1)
		}
	case "token":
		if err := tokenCommand(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "podium token:", err)
			os.Exit(1)
		}
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		fmt.Fprintf(os.Stderr, "podium: unknown command %q\n\n%s", os.Args[1], usage)
		os.Exit(2)
	}
}
