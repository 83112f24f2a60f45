// Command protogen writes the TypeScript types of the signaling protocol from
// the Go types of internal/signal, so the browser client cannot drift from the
// server. `make protocol` runs it; its test fails when the committed file is out
// of date, and another test checks docs/protocol.md against the same types.
//
//	go run ./tools/protogen [-o web/src/protocol/generated/messages.ts] [internal/signal]
//	go run ./tools/protogen -check    # fails if the committed file is out of date
//
// What it emits (load.go, render.go): every exported constant whose value is a constant
// expression, every exported struct whose fields carry json tags (the wire
// types; untagged ones such as Incoming are Go-only), exported named types, and
// union types of the constant families in unions (MessageType, ErrorCode, …).
// tygo cannot do the unions or the wire-type rule, and emits invalid TypeScript
// for untagged structs (`Err: error`).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

// OutputPath is where the generated file is committed, from the module root.
const OutputPath = "web/src/protocol/generated/messages.ts"

func main() {
	out := flag.String("o", OutputPath, "output file (- for stdout)")
	check := flag.Bool("check", false, "write nothing; fail if the -o file is not what the Go types generate")
	flag.Usage = func() {
		fmt.Fprintln(os.Stderr, "usage: protogen [-check] [-o file.ts] [package dir, default internal/signal]")
		flag.PrintDefaults()
	}
	flag.Parse()
	dir := "internal/signal"
	switch flag.NArg() {
	case 0:
	case 1:
		dir = flag.Arg(0)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err := run(dir, *out, *check); err != nil {
		fmt.Fprintln(os.Stderr, "protogen:", err)
		os.Exit(1)
	}
}

func run(dir, out string, check bool) error {
	if check {
		return CheckUpToDate(dir, out)
	}
	src, err := Generate(dir)
	if err != nil {
		return err
	}
	if out == "-" {
		_, err = os.Stdout.Write(src)
		return err
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	return os.WriteFile(out, src, 0o644)
}
