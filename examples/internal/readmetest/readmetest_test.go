package readmetest_test

import (
	"slices"
	"strings"
	"testing"

	"leasekit.dev/examples/internal/readmetest"
)

func TestFenced(t *testing.T) {
	text := "intro\n```go\na := 1\n\n\tb()\n```\n```text\nout\n```\n```go\nc\n```\n```go\nopen"
	got := readmetest.Fenced(text, "go")
	want := []string{"a := 1\n\n\tb()", "c", "open"}
	if !slices.Equal(got, want) {
		t.Fatalf("Fenced(go) = %q, want %q", got, want)
	}
	if got := readmetest.Fenced(text, "text"); !slices.Equal(got, []string{"out"}) {
		t.Fatalf("Fenced(text) = %q", got)
	}
	if got := readmetest.Fenced("```gopher\nx\n```\n", "go"); len(got) != 0 {
		t.Fatalf("Fenced took a ```gopher block for a ```go one: %q", got)
	}
}

func TestMarked(t *testing.T) {
	src := "func f() {\n\t// readme:begin\n\tx := 1\n\t\ty()\n\t// readme:end\n\tz()\n\t// readme:begin\n\tleft open\n"
	want := []string{"x := 1\n\ty()", "left open"}
	if got := readmetest.Marked(src); !slices.Equal(got, want) {
		t.Fatalf("Marked = %q, want %q", got, want)
	}
}

// TestRead reads the repository's README from this package's directory,
// two below the root.
func TestRead(t *testing.T) {
	if r := readmetest.Read(t); !strings.HasPrefix(r, "# leasekit\n") {
		t.Fatalf("Read returned %.40q, not the repository's README", r)
	}
}
