package main

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"leasekit.dev/examples/internal/readmetest"
	"leasekit.dev/examples/operator/internal/demo"
)

// The quick start's excerpt of a run shows summary lines that the demo
// prints: every line of the excerpt after the progress lines starts with
// one of the summary's labels.
func TestReadmeExcerptUsesTheSummarysLabels(t *testing.T) {
	var excerpt string
	for _, b := range readmetest.Fenced(readmetest.Read(t), "text") {
		if strings.HasPrefix(b, "$ go run ./examples/operator") {
			excerpt = b
		}
	}
	if excerpt == "" {
		t.Fatal("README.md has no ```text block starting with a run of go run ./examples/operator")
	}
	var out bytes.Buffer
	if err := (&demo.Summary{}).WriteText(&out); err != nil {
		t.Fatal(err)
	}
	labels := map[string]bool{}
	for line := range strings.Lines(out.String()) {
		if !strings.HasPrefix(line, " ") && strings.TrimSpace(line) != "" {
			labels[label(line)] = true
		}
	}
	summary := false
	for line := range strings.Lines(excerpt) {
		line = strings.TrimRight(line, "\n")
		f := strings.Fields(line)
		switch {
		case len(f) == 0 || line == "..." || strings.HasPrefix(line, " "):
		case strings.HasPrefix(line, "$ ") || strings.HasPrefix(line, "leasekit operator:") || f[0] == "generation" && !summary:
		default:
			summary = true
			if label := label(line); !labels[label] {
				t.Errorf("README's excerpt shows %q, but the summary prints no line labelled %q (it prints %v)", line, label, keys(labels))
			}
		}
	}
	if !summary {
		t.Error("README's excerpt shows no summary line")
	}
}

// label returns a summary line's label: the text before the first run of
// two spaces that pads the label column, or before the colon of
// "violations: N".
func label(line string) string {
	if l, _, ok := strings.Cut(line, "  "); ok {
		return strings.TrimSpace(l)
	}
	l, _, _ := strings.Cut(line, ":")
	return strings.TrimSpace(l)
}

func keys(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
