package bench

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io/fs"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"

	"leasekit.dev/dirlife"
	"leasekit.dev/internal/testkit/cputime"
	"leasekit.dev/publish"
)

// linkTree returns 200 files of 64 KiB as an fs.FS; changed sets the
// first file's bytes to those of generation gen.
func linkTree() (fsys fstest.MapFS, changed func(gen int64)) {
	fsys = fstest.MapFS{}
	fill := func(i int, seed int64) *fstest.MapFile {
		data := make([]byte, 64<<10)
		for j := range data {
			data[j] = byte(int64(j)*31 + seed*7)
		}
		copy(data, fmt.Sprintf("file %d, seed %d", i, seed))
		return &fstest.MapFile{Data: data, Mode: 0o644}
	}
	for i := range 200 {
		fsys[fmt.Sprintf("d%d/f%03d", i/50, i)] = fill(i, int64(i))
	}
	return fsys, func(gen int64) { fsys["d0/f000"] = fill(0, -gen) }
}

// BenchmarkLinkUnchanged200x64K publishes, durable, a tree of 200 files
// of 64 KiB of which one changes each generation, as a new key each time,
// through PublishFS: impl=leasekit with LinkUnchanged, which hashes every
// input byte and writes only the changed file, beside impl=baseline, the
// Publisher without it (the full durable write of every file). It keeps
// the last 10 generations leased, as readers would, and reports:
//
//   - write-ratio: bytes passed to write(2) under Root (Stats.BytesWritten)
//     per generation over the changed bytes (64 KiB);
//   - wchar-ratio: the same from the process's own count (/proc/self/io,
//     Linux), metadata included;
//   - disk-ratio: the blocks the 10 leased generations take, each inode
//     counted once, over their unique bytes;
//   - hash-share: the share of the time a SHA-256 of every input byte
//     takes, measured apart in the same run;
//   - cpu-ns/op: the process's CPU time per generation, steadier than
//     ns/op on a shared machine. Of impl=leasekit's, a share goes to the
//     check of the 199 files it links: each was linked the generation
//     before, which moved its change time, so it is read and compared
//     byte for byte with the new file before it is linked again (no
//     SHA-256; see dirlife.File).
//
// The time ratio is the two ns/op of one invocation:
//
//	go test -run '^$' -bench '^BenchmarkLinkUnchanged200x64K$' -benchtime 100x leasekit.dev/internal/bench
func BenchmarkLinkUnchanged200x64K(b *testing.B) {
	const held = 10
	tree, change := linkTree()
	ctx := context.Background()
	for _, c := range []struct {
		impl string
		link bool
	}{{"leasekit", true}, {"baseline", false}} {
		b.Run("impl="+c.impl, func(b *testing.B) {
			root := filepath.Join(b.TempDir(), "root")
			p := publish.New(root, dirlife.IntCodec[int64]{Prefix: "gen-"}, nopBuild,
				publish.Options[int64, struct{}, int]{LinkUnchanged: c.link})
			if err := p.Boot(); err != nil {
				b.Fatal(err)
			}
			var leases []func()
			publishGen := func(key int64) {
				change(key)
				if _, err := p.PublishFS(ctx, key, tree, 0); err != nil {
					b.Fatal(err)
				}
				l, _ := p.Slot().Lease()
				leases = append(leases, l.Release)
				if len(leases) > held {
					leases[0]()
					leases = leases[1:]
				}
			}
			var key int64
			for range held { // the generations before
				key++
				publishGen(key)
			}
			settle()
			before, wcharBefore := p.Stats().BytesWritten, writtenBytes()
			b.ReportAllocs()
			b.SetBytes(200 << 16)
			start, _ := cputime.Process()
			for b.Loop() {
				key++
				publishGen(key)
			}
			reportCPU(b, start)
			wchar := writtenBytes() - wcharBefore
			b.StopTimer()
			n := float64(b.N)
			b.ReportMetric(float64(p.Stats().BytesWritten-before)/n/(64<<10), "write-ratio")
			if wcharBefore >= 0 {
				b.ReportMetric(float64(wchar)/n/(64<<10), "wchar-ratio")
			}
			if err := p.Settle(ctx); err != nil {
				b.Fatal(err)
			}
			// The 10 leased generations: 199 files shared by all, and one of
			// their own each.
			unique := float64((199 + held) * 64 << 10)
			b.ReportMetric(float64(diskBytes(b, root))/unique, "disk-ratio")
			for _, release := range leases {
				release()
			}
		})
	}
	b.Run("impl=hash-only", func(b *testing.B) {
		// What the hashing of every input byte costs by itself: the share
		// of impl=leasekit's time is this ns/op over that one.
		b.ReportAllocs()
		b.SetBytes(200 << 16)
		var sink [sha256.Size]byte
		start, _ := cputime.Process()
		for b.Loop() {
			for _, f := range tree {
				sink = sha256.Sum256(f.Data)
			}
		}
		reportCPU(b, start)
		_ = sink
	})
}

// diskBytes returns the bytes allocated to the files and directories
// under root, each inode counted once.
func diskBytes(b *testing.B, root string) int64 {
	seen := map[uint64]bool{}
	var total int64
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			total += fi.Size()
			return nil
		}
		if !seen[uint64(st.Ino)] {
			seen[uint64(st.Ino)] = true
			total += st.Blocks * 512
		}
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return total
}
