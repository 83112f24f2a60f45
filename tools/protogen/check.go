package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
)

// CheckUpToDate regenerates from the Go package in dir and compares the result
// with the committed file at path; the error names the file and shows where
// they part.
func CheckUpToDate(dir, path string) error {
	got, err := Generate(dir)
	if err != nil {
		return err
	}
	committed, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if bytes.Equal(got, committed) {
		return nil
	}
	return fmt.Errorf("%s is out of date with the Go types in %s: run `make protocol` and commit it\n%s", path, dir, diffExcerpt(committed, got))
}

// diffExcerpt shows the first hunks of a line diff of the committed and the
// generated text: committed lines marked -, generated ones +, with context.
func diffExcerpt(committed, generated []byte) string {
	const context, maxHunks, maxLines = 2, 3, 30
	a := strings.Split(string(committed), "\n")
	b := strings.Split(string(generated), "\n")
	ops := lineDiff(a, b)
	var s strings.Builder
	hunks := 0
	for k := 0; k < len(ops); {
		if ops[k].mark == ' ' {
			k++
			continue
		}
		if hunks == maxHunks {
			s.WriteString("…\n")
			break
		}
		hunks++
		last := k // changes closer than 2*context lines share a hunk
		for e := k + 1; e < len(ops) && e <= last+2*context; e++ {
			if ops[e].mark != ' ' {
				last = e
			}
		}
		start, end := max(0, k-context), min(len(ops), last+context+1)
		fmt.Fprintf(&s, "@@ committed line %d @@\n", ops[start].line+1)
		for n, o := range ops[start:end] {
			if n == maxLines {
				fmt.Fprintf(&s, "… %d more lines\n", end-start-maxLines)
				break
			}
			s.WriteString(string(o.mark) + " " + o.text + "\n")
		}
		k = end
	}
	return s.String()
}

type diffOp struct {
	mark byte // ' ', '-' or '+'
	line int  // index in the committed text (of the next committed line for +)
	text string
}

// lineDiff is a longest-common-subsequence diff; the files are a few hundred
// lines, so the quadratic table is small.
func lineDiff(a, b []string) []diffOp {
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, diffOp{' ', i, a[i]})
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', i, a[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', i, b[j]})
			j++
		}
	}
	return ops
}
