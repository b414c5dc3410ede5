package bench

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"testing/fstest"

	"leasekit.dev/dirlife"
	"leasekit.dev/internal/testkit/gentree"
	"leasekit.dev/internal/testkit/memstat"
	"leasekit.dev/publish"
)

func nopBuild(context.Context, string) (struct{}, error) { return struct{}{}, nil }

func newFilePublisher(b *testing.B, noSync bool) *publish.Publisher[int64, struct{}, int] {
	p := publish.New(filepath.Join(b.TempDir(), "root"), dirlife.IntCodec[int64]{Prefix: "gen-"}, nopBuild,
		publish.Options[int64, struct{}, int]{NoSync: noSync})
	if err := p.Boot(); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkPublishFS publishes a tree of 64 MiB in 1,000 files as a new
// key each time: PublishFS of the tree read from an fs.FS as it is
// copied (generated, kind=publishfs, or held in memory as an
// fstest.MapFS, kind=publishfs-mapfs: what Publish would cost as a form
// of PublishFS), Publish of the tree held in memory, and the baseline's
// write of it (held in memory, not durable); and identical re-publishes,
// which PublishFS tells by the digest of a staged copy it then discards,
// and Publish by a fingerprint of the files. The replaced
// directory goes with each publish, inside the timer, as a publisher
// removes it.
func BenchmarkPublishFS(b *testing.B) {
	tree := gentree.Tree{Files: 1000, Total: 64 << 20}
	files := dirlife.Files(tree.InMemory())
	memFS := fstest.MapFS{}
	for name, data := range files {
		memFS[name] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	ctx := context.Background()
	type filePublisher = publish.Publisher[int64, struct{}, int]
	kinds := []struct {
		name      string
		unchanged bool // every publish is of key 1, after a first outside the timer
		publish   func(p *filePublisher, key int64) error
	}{
		{"publishfs", false, func(p *filePublisher, key int64) error { _, err := p.PublishFS(ctx, key, tree, 0); return err }},
		{"publishfs-mapfs", false, func(p *filePublisher, key int64) error { _, err := p.PublishFS(ctx, key, memFS, 0); return err }},
		{"publish-unchanged", true, func(p *filePublisher, key int64) error { _, err := p.Publish(ctx, key, files, 0); return err }},
		{"publish", false, func(p *filePublisher, key int64) error { _, err := p.Publish(ctx, key, files, 0); return err }},
		{"publishfs-unchanged", true, func(p *filePublisher, key int64) error { _, err := p.PublishFS(ctx, key, tree, 0); return err }},
	}
	for _, mode := range syncModes {
		for _, k := range kinds {
			b.Run("impl=leasekit/"+mode.name+"/kind="+k.name, func(b *testing.B) {
				p := newFilePublisher(b, mode.noSync)
				key := int64(1)
				if k.unchanged {
					if err := k.publish(p, key); err != nil {
						b.Fatal(err)
					}
				}
				settle()
				b.ReportAllocs()
				b.SetBytes(tree.Total)
				for b.Loop() {
					if !k.unchanged {
						key++
					}
					if err := k.publish(p, key); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
	b.Run("impl=baseline/kind=write", func(b *testing.B) {
		l := newBaseline(b)
		settle()
		b.ReportAllocs()
		b.SetBytes(tree.Total)
		var id int64
		for b.Loop() {
			id++
			if _, err := l.Write(id, files); err != nil {
				b.Fatal(err)
			}
			if err := l.Prune(id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPublishFSMemory publishes a generated tree of 1 GiB in 10,000
// files, durable, through PublishFS, once per iteration, and reports the
// process's peak RSS growth over its RSS before the publish
// (peak-RSS-growth-MiB; the peak is reset first, through
// /proc/self/clear_refs). It needs Linux and a Root on disk, and is
// skipped unless LEASEKIT_BENCH_LARGE is set, the size in MiB (1024 for
// the bound of 64 MiB):
//
//	LEASEKIT_BENCH_LARGE=1024 go test -run '^$' -bench '^BenchmarkPublishFSMemory$' -benchtime 1x leasekit.dev/internal/bench
func BenchmarkPublishFSMemory(b *testing.B) {
	mib, err := strconv.Atoi(os.Getenv("LEASEKIT_BENCH_LARGE"))
	if err != nil || mib <= 0 {
		b.Skip("set LEASEKIT_BENCH_LARGE to a size in MiB to publish a tree that large")
	}
	if err := memstat.ResetPeak(); err != nil {
		b.Skipf("cannot reset the peak RSS: %v", err)
	}
	tree := gentree.Tree{Files: 10_000, Total: int64(mib) << 20}
	p := newFilePublisher(b, false)
	ctx := context.Background()
	var growth int64
	var key int64
	b.ReportAllocs()
	b.SetBytes(tree.Total)
	for b.Loop() {
		key++
		b.StopTimer()
		settle()
		if err := memstat.ResetPeak(); err != nil {
			b.Fatal(err)
		}
		start := procStatus(b, "VmRSS")
		b.StartTimer()
		rec, err := p.PublishFS(ctx, key, tree, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		growth = max(growth, procStatus(b, "VmHWM")-start)
		if n, size, err := gentree.Measure(rec.Dir); err != nil || n != int64(tree.Files) || size != tree.Total {
			b.Fatalf("published %d files of %d bytes (%v), want %d of %d", n, size, err, tree.Files, tree.Total)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(growth)/(1<<20), "peak-RSS-growth-MiB")
}

// procStatus returns a field of /proc/self/status, in bytes.
func procStatus(b *testing.B, field string) int64 {
	v, err := memstat.Status(field)
	if err != nil {
		b.Fatal(err)
	}
	return v
}
