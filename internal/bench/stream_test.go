package bench

import (
	"context"
	"os"
	"path"
	"testing"
	"testing/fstest"

	"leasekit.dev/dirlife"
)

// The ways to write one module (32 files x 4 KiB) as a new ID each time:
// Write of Files, WriteStream with a fill that writes the same
// files, CopyFS from an in-memory fs.FS, and the baseline's Write; and a
// streamed identical re-publish, which stages, hashes and discards. Each
// new ID's predecessor is pruned outside the timer.
func BenchmarkWriteKinds32x4K(b *testing.B) {
	files := moduleFiles()
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	fill := func(_ context.Context, dir *os.Root) error {
		for name, data := range files {
			if err := dir.MkdirAll(path.Dir(name), 0o755); err != nil {
				return err
			}
			if err := dir.WriteFile(name, data, 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	kinds := []struct {
		name  string
		write func(l dirlife.Layout[int64], id int64) error
	}{
		{"write", func(l dirlife.Layout[int64], id int64) error { _, err := l.Write(id, files); return err }},
		{"stream", func(l dirlife.Layout[int64], id int64) error {
			_, err := l.WriteStream(context.Background(), id, fill, dirlife.StreamOptions{})
			return err
		}},
		{"copy", func(l dirlife.Layout[int64], id int64) error {
			_, err := l.CopyFS(context.Background(), id, fsys, dirlife.StreamOptions{})
			return err
		}},
	}
	for _, mode := range syncModes {
		for _, k := range kinds {
			b.Run("impl=leasekit/"+mode.name+"/kind="+k.name, func(b *testing.B) {
				l := newLayout(b, mode.noSync)
				settle()
				b.ReportAllocs()
				var id int64
				for b.Loop() {
					id++
					if err := k.write(l, id); err != nil {
						b.Fatal(err)
					}
					b.StopTimer()
					if err := l.Prune(id); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
			})
		}
		b.Run("impl=leasekit/"+mode.name+"/kind=stream-unchanged", func(b *testing.B) {
			l := newLayout(b, mode.noSync)
			w, err := l.WriteStream(context.Background(), 1, fill, dirlife.StreamOptions{})
			if err != nil {
				b.Fatal(err)
			}
			settle()
			b.ReportAllocs()
			for b.Loop() {
				again, err := l.WriteStream(context.Background(), 1, fill, dirlife.StreamOptions{Current: w.Digest})
				if err != nil || again.Published {
					b.Fatalf("identical re-publish: %+v, %v", again, err)
				}
			}
		})
	}
	b.Run("impl=baseline/kind=write", func(b *testing.B) {
		l := newBaseline(b)
		settle()
		b.ReportAllocs()
		var id int64
		for b.Loop() {
			id++
			if _, err := l.Write(id, files); err != nil {
				b.Fatal(err)
			}
			b.StopTimer()
			if err := l.Prune(id); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	})
}
