package readme

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readmePath is the repository's README, from this package's directory.
var readmePath = filepath.Join("..", "..", "README.md")

// fenced returns the contents of every fenced block of text opened by
// "```"+lang, in order.
func fenced(text, lang string) []string {
	var blocks []string
	var cur []string
	in := false
	for line := range strings.Lines(text) {
		trimmed := strings.TrimRight(line, "\n")
		switch {
		case !in && trimmed == "```"+lang:
			in, cur = true, nil
		case in && trimmed == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, trimmed)
		}
	}
	return blocks
}

// marked returns the text between each "// readme:begin" and
// "// readme:end" line of src, in order, with one tab of indentation
// removed.
func marked(src string) []string {
	var regions []string
	var cur []string
	in := false
	for line := range strings.Lines(src) {
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "// readme:begin":
			in, cur = true, nil
		case trimmed == "// readme:end":
			in = false
			regions = append(regions, strings.Join(cur, "\n"))
		case in:
			cur = append(cur, strings.TrimPrefix(strings.TrimRight(line, "\n"), "\t"))
		}
	}
	return regions
}

// Every ```go block of the README is a snippet of snippets_test.go, which
// compiles: the README shows only code that builds against the modules as
// they are.
func TestReadmeGoBlocksCompile(t *testing.T) {
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("snippets_test.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks, snippets := fenced(string(readme), "go"), marked(string(src))
	if len(blocks) == 0 {
		t.Fatal("README.md has no ```go block")
	}
	for i := range max(len(blocks), len(snippets)) {
		switch {
		case i >= len(blocks):
			t.Errorf("snippet %d of snippets_test.go is not in README.md:\n%s", i+1, snippets[i])
		case i >= len(snippets):
			t.Errorf("README.md's ```go block %d has no compiled snippet in snippets_test.go:\n%s", i+1, blocks[i])
		case blocks[i] != snippets[i]:
			t.Errorf("README.md's ```go block %d differs from snippet %d of snippets_test.go:\nREADME:\n%s\n\nsnippet:\n%s", i+1, i+1, blocks[i], snippets[i])
		}
	}
}
