package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"leasekit.dev/dirlife"
	"leasekit.dev/internal/testkit/cputime"
	"leasekit.dev/publish"
)

// artifact256MiB is an unpacked artifact of 256 MiB: 64 files of 4 MiB
// in 8 directories, each file's bytes its own.
func artifact256MiB() dirlife.Files {
	files := dirlife.Files{}
	for i := range 64 {
		files[fmt.Sprintf("layer-%d/blob-%02d", i%8, i)] = bytes.Repeat(fmt.Appendf(nil, "%08d", i), 4<<20/8)
	}
	return files
}

func noBuild(context.Context, string) (struct{}, error) { return struct{}{}, nil }

// BenchmarkRestartUnchanged256MiB is a restart of a durable Publisher
// whose 256 MiB artifact did not change while it was down, timed from Boot
// to the end of the removals the first publish leaves: Publish of the
// files held in memory (way=publish) or PublishFS of the same tree as an
// fs.FS (way=publishfs). impl=leasekit boots under Adopt and keeps the
// directory the process before wrote; the publish reads it back and
// verifies it, and serves it: Publish before writing anything, comparing
// it with the files, PublishFS once its copy is staged, hashing it, and
// then discarding the copy unsynced.
// impl=baseline is the Publisher without Adopt, whose Boot empties Root
// and whose publish writes the artifact again.
//
// write-B/op is the bytes the process passed to write(2) per restart
// (Linux; -1 elsewhere); left-B/op the bytes of the files under Root
// after the restart that were not there before it (0: the restart kept
// what it found); cpu-ms/op the process's CPU time per restart, steadier
// than the wall clock on a shared machine (but blind to a wait for the
// disk); verify-ms/op, for way=publish, the time the publish spent
// reading and verifying (impl=leasekit) or writing (impl=baseline),
// [publish.Timings].Write.
func BenchmarkRestartUnchanged256MiB(b *testing.B) {
	files := artifact256MiB()
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	ctx := context.Background()
	for _, way := range []string{"publish", "publishfs"} {
		for _, c := range []struct {
			impl  string
			adopt bool
		}{{"leasekit", true}, {"baseline", false}} {
			b.Run("way="+way+"/impl="+c.impl, func(b *testing.B) {
				root := filepath.Join(b.TempDir(), "root")
				var last publish.PublishEvent[int64]
				opts := publish.Options[int64, struct{}, int]{Adopt: c.adopt, OnPublish: func(ev publish.PublishEvent[int64]) { last = ev }}
				restart := func() *publish.Publisher[int64, struct{}, int] {
					p := publish.New(root, dirlife.IntCodec[int64]{Prefix: "gen-"}, noBuild, opts)
					if err := p.Boot(); err != nil {
						b.Fatal(err)
					}
					var err error
					if way == "publish" {
						_, err = p.Publish(ctx, 1, files, 0)
					} else {
						_, err = p.PublishFS(ctx, 1, fsys, 0)
					}
					if err != nil {
						b.Fatal(err)
					}
					if err := p.Settle(ctx); err != nil {
						b.Fatal(err)
					}
					return p
				}
				restart() // the process before the restarts
				settle()
				b.ReportAllocs()
				b.SetBytes(256 << 20)
				var written, left int64
				var write, cpu time.Duration
				for b.Loop() {
					b.StopTimer()
					before := treeFiles(b, root)
					b.StartTimer()
					wrote, used := writtenBytes(), cpuNow()
					p := restart()
					written, cpu = written+writtenBytes()-wrote, cpu+cpuNow()-used
					b.StopTimer()
					if c.adopt && p.Stats().Adopted != 1 {
						b.Fatalf("the kept directory was not claimed: %+v", p.Stats())
					}
					write += last.Timings.Write
					left += newBytes(before, treeFiles(b, root))
					settle()
					b.StartTimer()
				}
				if writtenBytes() < 0 {
					written = -1 * int64(b.N)
				}
				b.ReportMetric(float64(written)/float64(b.N), "write-B/op")
				b.ReportMetric(float64(left)/float64(b.N), "left-B/op")
				b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
				if way == "publish" {
					b.ReportMetric(float64(write.Milliseconds())/float64(b.N), "verify-ms/op")
				}
			})
		}
	}
}

// BenchmarkVerify256MiB is the integrity check of a kept directory on its
// own, on a 256 MiB directory a durable write left: impl=leasekit is
// [dirlife.Layout.Verify] against a digest (check=digest: every file read
// and hashed, PublishFS's check) and Verify against
// the files in memory (check=files: every file read and compared,
// Publish's); impl=baseline reads every file to the end and checks
// nothing.
func BenchmarkVerify256MiB(b *testing.B) {
	files := artifact256MiB()
	l := dirlife.Layout[int64]{Root: filepath.Join(b.TempDir(), "root"), Codec: dirlife.IntCodec[int64]{Prefix: "gen-"}}
	dir, err := l.Write(1, files)
	if err != nil {
		b.Fatal(err)
	}
	want, err := l.DigestFiles(files)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	settle()
	b.Run("impl=leasekit/check=digest", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(256 << 20)
		for b.Loop() {
			if err := l.Verify(ctx, 1, want, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=leasekit/check=files", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(256 << 20)
		for b.Loop() {
			if err := l.Verify(ctx, 1, want, files); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=baseline", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(256 << 20)
		buf := make([]byte, 128<<10)
		for b.Loop() {
			for name := range files {
				f, err := os.Open(filepath.Join(dir, filepath.FromSlash(name)))
				if err != nil {
					b.Fatal(err)
				}
				// Neither side's shortcut: through buf, as the checks read.
				_, err = io.CopyBuffer(struct{ io.Writer }{io.Discard}, struct{ io.Reader }{f}, buf)
				f.Close()
				if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// treeFiles returns the regular files under root, by path.
func treeFiles(b *testing.B, root string) map[string]fs.FileInfo {
	out := map[string]fs.FileInfo{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		out[p] = fi
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// newBytes returns the size of the files of after that are none of
// before's (not the same inode with the same mtime).
func newBytes(before, after map[string]fs.FileInfo) int64 {
	old := slices.Collect(maps.Values(before))
	var n int64
	for _, fi := range after {
		// A new file may take a removed one's inode: it has a new mtime.
		if !slices.ContainsFunc(old, func(o fs.FileInfo) bool { return os.SameFile(o, fi) && o.ModTime().Equal(fi.ModTime()) }) {
			n += fi.Size()
		}
	}
	return n
}

// writtenBytes returns the bytes this process has passed to write(2) and
// its kin, from /proc/self/io, or -1 where that is not there.
func writtenBytes() int64 {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return -1
	}
	for line := range bytes.Lines(data) {
		var n int64
		if _, err := fmt.Sscanf(string(line), "wchar: %d", &n); err == nil {
			return n
		}
	}
	return -1
}

// cpuNow returns the process's CPU time so far, or zero where it is not
// known.
func cpuNow() time.Duration {
	t, _ := cputime.Process()
	return t
}
