package dirlife

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkSyncMode compares the ways a durable Write can make a
// 32 x 4 KiB staging tree durable, beside NoSync: the figures that chose
// syncDefault.
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
		name   string
		mode   syncMode
		noSync bool
	}{
		{"sync=none", syncDefault, true},
		{"sync=files", syncFiles, false},
		{"sync=fs", syncFS, false},
	} {
		if c.mode == syncFS && !haveSyncfs {
			continue
		}
		b.Run(c.name, func(b *testing.B) {
			l := Layout[int64]{Root: filepath.Join(b.TempDir(), "root"), Codec: IntCodec[int64]{Prefix: "gen-"}, NoSync: c.noSync, syncMode: c.mode}
			b.ReportAllocs()
			var id int64
			for b.Loop() {
				id++
				if _, err := l.Write(id%8, files); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
