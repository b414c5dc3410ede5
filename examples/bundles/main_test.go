package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"
)

// A short run publishes every kind of outcome, refuses no lease and sees
// no leased directory change.
func TestRun(t *testing.T) {
	var stderr bytes.Buffer
	sum, err := run(context.Background(), filepath.Join(t.TempDir(), "bundles"), 3, 300*time.Millisecond, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Violations != 0 || sum.LeasesRefused != 0 {
		t.Fatalf("summary %+v:\n%s", sum, stderr.String())
	}
	if sum.Published == 0 || sum.Changed == 0 || sum.Refused == 0 || sum.Reads == 0 || sum.OnDisk != 1 {
		t.Fatalf("summary %+v: want new generations, changes, refusals, reads, and one directory left", sum)
	}
	// The about page never changes: every bundle after the first links it.
	if sum.Linked == 0 || sum.BytesWritten >= sum.BytesPublished {
		t.Fatalf("summary %+v: want unchanged files linked, fewer bytes written than published", sum)
	}
}
