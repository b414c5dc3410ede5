package bench

import (
	"fmt"
	"path/filepath"
	"testing"

	"leasekit.dev/dirlife"
	"leasekit.dev/internal/baseline"
)

// moduleFiles is a module-sized write: 32 files of 4 KiB in 4 directories.
func moduleFiles() map[string][]byte {
	files := map[string][]byte{}
	for i := range 32 {
		data := make([]byte, 4096)
		for j := range data {
			data[j] = byte(i*31 + j)
		}
		files[fmt.Sprintf("pkg%d/file%02d.cue", i%4, i)] = data
	}
	return files
}

func newLayout(b *testing.B, noSync bool) dirlife.Layout[int64] {
	return dirlife.Layout[int64]{
		Root:   filepath.Join(b.TempDir(), "root"),
		Codec:  dirlife.IntCodec[int64]{Prefix: "gen-"},
		NoSync: noSync,
	}
}

func newBaseline(b *testing.B) baseline.DirLayout {
	return baseline.DirLayout{Root: filepath.Join(b.TempDir(), "root"), Prefix: "gen-"}
}

// Write of 32 files x 4 KiB, as a new ID each time (the common path: one
// directory per generation) and as a rewrite of one existing ID (the rare
// path: a re-reconcile of the same generation), which also removes the
// replaced copy.
func BenchmarkWrite32x4K(b *testing.B) {
	files := moduleFiles()
	for _, c := range []struct {
		name string
		id   func(i int64) int64
	}{
		{"case=new", func(i int64) int64 { return i }},
		{"case=rewrite", func(int64) int64 { return 1 }},
	} {
		for _, noSync := range []bool{false, true} {
			name := c.name + "/impl=leasekit/durable"
			if noSync {
				name = c.name + "/impl=leasekit/nosync"
			}
			b.Run(name, func(b *testing.B) {
				l := newLayout(b, noSync)
				settle()
				b.ReportAllocs()
				var i int64
				for b.Loop() {
					i++
					if _, err := l.Write(c.id(i), dirlife.Files(files)); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		b.Run(c.name+"/impl=baseline", func(b *testing.B) {
			l := newBaseline(b)
			settle()
			b.ReportAllocs()
			var i int64
			for b.Loop() {
				i++
				if _, err := l.Write(c.id(i), files); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

const manyDirs = 1000

// IDs over 1,000 directories.
func BenchmarkIDs1000(b *testing.B) {
	b.Run("impl=leasekit", func(b *testing.B) { benchIDs(b, leasekitLayout{newLayout(b, true)}) })
	b.Run("impl=baseline", func(b *testing.B) { benchIDs(b, newBaseline(b)) })
}

func benchIDs(b *testing.B, l dirLayout) {
	one := map[string][]byte{"f": []byte("x")}
	for id := range int64(manyDirs) {
		if _, err := l.Write(id, one); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		if ids, err := l.IDs(); err != nil || len(ids) != manyDirs {
			b.Fatal(len(ids), err)
		}
	}
}

// A dirLayout is what the directory benchmarks need of a layout.
type dirLayout interface {
	Write(id int64, files map[string][]byte) (string, error)
	Prune(keep ...int64) error
	IDs() ([]int64, error)
}

// leasekitLayout adapts dirlife.Layout to dirLayout; writes, which only set
// up the IDs and Prune benchmarks, skip syncing.
type leasekitLayout struct{ l dirlife.Layout[int64] }

func (a leasekitLayout) Write(id int64, files map[string][]byte) (string, error) {
	nosync := a.l
	nosync.NoSync = true
	return nosync.Write(id, files)
}

func (a leasekitLayout) Prune(keep ...int64) error { return a.l.Prune(keep...) }
func (a leasekitLayout) IDs() ([]int64, error)     { return a.l.IDs() }

// Prune of 1,000 one-file directories down to one; the directories are
// recreated outside the timer.
func BenchmarkPrune1000(b *testing.B) {
	b.Run("impl=leasekit", func(b *testing.B) { benchPrune(b, leasekitLayout{newLayout(b, false)}) })
	b.Run("impl=baseline", func(b *testing.B) { benchPrune(b, newBaseline(b)) })
}

func benchPrune(b *testing.B, l dirLayout) {
	one := map[string][]byte{"f": []byte("x")}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		for id := range int64(manyDirs) {
			if _, err := l.Write(id, one); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := l.Prune(0); err != nil {
			b.Fatal(err)
		}
	}
}
