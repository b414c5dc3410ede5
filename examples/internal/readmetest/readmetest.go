package readmetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Read returns the README.md of the workspace root, the nearest directory
// above the working directory (a test's package directory) that holds
// go.work. It fails t if there is none or it cannot be read.
func Read(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.work")); err == nil {
			b, err := os.ReadFile(filepath.Join(dir, "README.md"))
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		up := filepath.Dir(dir)
		if up == dir {
			t.Fatal("readmetest: no go.work above the working directory")
		}
		dir = up
	}
}

// Fenced returns the contents of every fenced block of text opened by a
// line "```"+lang, in order, without the fences and their lines' ends.
func Fenced(text, lang string) []string {
	return regions(text, func(line string) (bool, bool) {
		line = strings.TrimRight(line, "\n")
		return line == "```"+lang, line == "```"
	}, func(line string) string { return strings.TrimRight(line, "\n") })
}

// Marked returns the text between each "// readme:begin" and
// "// readme:end" line of src, in order, with one tab of indentation
// removed from each line.
func Marked(src string) []string {
	return regions(src, func(line string) (bool, bool) {
		line = strings.TrimSpace(line)
		return line == "// readme:begin", line == "// readme:end"
	}, func(line string) string { return strings.TrimPrefix(strings.TrimRight(line, "\n"), "\t") })
}

// regions returns the lines of text between an opening and a closing
// line, as edge reports them, each line as keep returns it and the lines
// of a region joined by "\n". A region still open at the end counts.
func regions(text string, edge func(line string) (open, close bool), keep func(string) string) []string {
	var out, cur []string
	in := false
	for line := range strings.Lines(text) {
		open, closing := edge(line)
		switch {
		case !in && open:
			in, cur = true, nil
		case in && closing:
			in = false
			out = append(out, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, keep(line))
		}
	}
	if in {
		out = append(out, strings.Join(cur, "\n"))
	}
	return out
}
