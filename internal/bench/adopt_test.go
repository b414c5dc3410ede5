package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"leasekit.dev/dirlife"
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
// whose artifact did not change while it was down: Boot, then the first
// Publish of the same 256 MiB. impl=leasekit boots under Adopt, keeps the
// directory the last process wrote, and verifies it (reading it back)
// instead of writing it; impl=baseline is the Publisher without Adopt,
// whose Boot empties Root and whose Publish writes every byte again.
// write-B/op is the bytes the process passed to write(2) per restart
// (Linux; -1 elsewhere).
func BenchmarkRestartUnchanged256MiB(b *testing.B) {
	files := artifact256MiB()
	ctx := context.Background()
	for _, c := range []struct {
		impl  string
		adopt bool
	}{{"leasekit", true}, {"baseline", false}} {
		b.Run("impl="+c.impl, func(b *testing.B) {
			root := filepath.Join(b.TempDir(), "root")
			opts := publish.Options[int64, struct{}, int]{Adopt: c.adopt}
			restart := func() *publish.Publisher[int64, struct{}, int] {
				p := publish.New(root, dirlife.IntCodec[int64]{Prefix: "gen-"}, noBuild, opts)
				if err := p.Boot(); err != nil {
					b.Fatal(err)
				}
				if _, err := p.Publish(ctx, 1, files, 0); err != nil {
					b.Fatal(err)
				}
				return p
			}
			if err := restart().Settle(ctx); err != nil { // the process before the restarts
				b.Fatal(err)
			}
			b.ReportAllocs()
			var written int64
			for b.Loop() {
				before := writtenBytes()
				p := restart()
				written += writtenBytes() - before
				if c.adopt && p.Stats().Adopted != 1 {
					b.Fatalf("the kept directory was not claimed: %+v", p.Stats())
				}
				if err := p.Settle(ctx); err != nil {
					b.Fatal(err)
				}
			}
			if writtenBytes() < 0 {
				written = -1 * int64(b.N)
			}
			b.ReportMetric(float64(written)/float64(b.N), "write-B/op")
		})
	}
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
