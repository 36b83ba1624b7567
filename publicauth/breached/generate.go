//go:build ignore

// Command generate writes passwords.txt.gz, the list of breached passwords that
// publicauth's password rule refuses, from a password list ranked most common first (one
// password a line). It keeps the first -n distinct passwords of at least -min characters,
// lower-cased (the rule compares case-insensitively), sorted, one a line, gzip-compressed.
// The output depends only on the input, so regenerating from the same list gives the same
// file. See README.md for the source list and the exact command.
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

func main() {
	in := flag.String("in", "", "ranked password list, one a line (required)")
	out := flag.String("out", "breached/passwords.txt.gz", "gzip file to write")
	n := flag.Int("n", 100000, "how many distinct passwords to keep")
	minChars := flag.Int("min", 8, "least length in characters; shorter ones fail the length rule anyway")
	flag.Parse()
	if *in == "" {
		fmt.Fprintln(os.Stderr, "generate: -in is required (see breached/README.md)")
		os.Exit(2)
	}
	if err := run(*in, *out, *n, *minChars); err != nil {
		fmt.Fprintln(os.Stderr, "generate:", err)
		os.Exit(1)
	}
}

func run(in, out string, n, minChars int) error {
	src, err := os.Open(in)
	if err != nil {
		return err
	}
	defer src.Close()

	seen := make(map[string]bool, n)
	var kept []string
	lines := bufio.NewScanner(src)
	for lines.Scan() && len(kept) < n {
		pw := strings.ToLower(strings.TrimRight(lines.Text(), "\r"))
		if !usable(pw, minChars) || seen[pw] {
			continue
		}
		seen[pw] = true
		kept = append(kept, pw)
	}
	if err := lines.Err(); err != nil {
		return fmt.Errorf("read %s: %w", in, err)
	}
	if len(kept) < n {
		return fmt.Errorf("%s has only %d usable passwords, want %d", in, len(kept), n)
	}
	slices.Sort(kept)

	f, err := os.Create(out)
	if err != nil {
		return err
	}
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		f.Close()
		return err
	}
	w := bufio.NewWriter(zw)
	for _, pw := range kept {
		w.WriteString(pw)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// usable reports whether pw is worth listing: valid UTF-8, long enough, and free of control
// characters and newlines (a line of the list holds exactly one password).
func usable(pw string, minChars int) bool {
	if !utf8.ValidString(pw) || utf8.RuneCountInString(pw) < minChars {
		return false
	}
	return strings.IndexFunc(pw, unicode.IsControl) < 0
}
