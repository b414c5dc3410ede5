package readme

import (
	"os"
	"testing"

	"leasekit.dev/examples/internal/readmetest"
)

// Every ```go block of the README is a snippet of snippets_test.go, which
// compiles: the README shows only code that builds against the modules as
// they are.
func TestReadmeGoBlocksCompile(t *testing.T) {
	src, err := os.ReadFile("snippets_test.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks, snippets := readmetest.Fenced(readmetest.Read(t), "go"), readmetest.Marked(string(src))
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
