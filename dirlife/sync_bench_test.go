package dirlife

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"leasekit.dev/dirlife/internal/sys"
)

// BenchmarkSyncMode compares the ways a durable Write can make a
// 32 x 4 KiB staging tree durable, beside NoSync: the figures that chose
// syncfs as the default. Each sub-benchmark starts on a clean filesystem,
// so none pays for the dirty data another left.
// flushFilesystem syncs the filesystem holding dir, where the system can.
func flushFilesystem(b *testing.B, dir string) {
	if !sys.HaveSyncfs {
		return
	}
	d, err := os.Open(dir)
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	if err := sys.Syncfs(d); err != nil {
		b.Fatal(err)
	}
}

func BenchmarkSyncMode(b *testing.B) {
	files := Files{}
	for i := range 32 {
		data := make([]byte, 4096)
		for j := range data {
			data[j] = byte(i*31 + j)
		}
		files[fmt.Sprintf("pkg%d/file%02d.cue", i%4, i)] = data
	}
	for _, c := range []struct {
		name    string
		perFile bool
		noSync  bool
	}{
		{"sync=none", false, true},
		{"sync=files", true, false},
		{"sync=fs", false, false},
	} {
		if !c.perFile && !c.noSync && !sys.HaveSyncfs {
			continue
		}
		for _, rewrite := range []bool{false, true} {
			name := "case=new/" + c.name
			if rewrite {
				name = "case=rewrite/" + c.name
			}
			b.Run(name, func(b *testing.B) {
				l := Layout[int64]{Root: filepath.Join(b.TempDir(), "root"), Codec: IntCodec[int64]{Prefix: "gen-"}, NoSync: c.noSync, PerFileSync: c.perFile}
				flushFilesystem(b, filepath.Dir(l.Root))
				b.ReportAllocs()
				var id int64
				for b.Loop() {
					if !rewrite {
						id++
					}
					if _, err := l.Write(id, files); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
