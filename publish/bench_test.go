package publish_test

import (
	"context"
	"path/filepath"
	"testing"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
)

// BenchmarkRepublish publishes the current key again with identical files:
// the re-reconcile of an unchanged resource, recognised without a copy of
// the files. The files are the size of a one-catalog platform module.
func BenchmarkRepublish(b *testing.B) {
	files := dirlife.Files{
		"cue.mod/module.cue": []byte("module: \"acme.example/platform@v0\"\nlanguage: version: \"v0.12.0\"\n"),
		"platform.cue":       make([]byte, 256),
	}
	p := newPublisher(b, filepath.Join(b.TempDir(), "root"), publish.Options[int64, dirlife.Digest, int]{NoSync: true})
	ctx := context.Background()
	if _, err := p.Publish(ctx, 1, files, 0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.Publish(ctx, 1, files, 0); err != nil {
			b.Fatal(err)
		}
	}
}
