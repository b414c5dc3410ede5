package bench

import (
	"context"
	"fmt"
	"os"
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

// syncModes are the two ways the write benchmarks write, by the name
// their sub-benchmarks carry: durably, and with NoSync.
var syncModes = []struct {
	name   string
	noSync bool
}{{"durable", false}, {"nosync", true}}

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
// replaced copy. For new IDs the previous one is removed outside the timer,
// so Root holds one ID whatever b.N.
func BenchmarkWrite32x4K(b *testing.B) {
	files := moduleFiles()
	for _, c := range []struct {
		name string
		id   func(i int64) int64
	}{
		{"case=new", func(i int64) int64 { return i }},
		{"case=rewrite", func(int64) int64 { return 1 }},
	} {
		for _, mode := range syncModes {
			b.Run(c.name+"/impl=leasekit/"+mode.name, func(b *testing.B) {
				l := newLayout(b, mode.noSync)
				benchWrite(b, leasekitLayout{l, !mode.noSync}, c.id, files)
			})
		}
		b.Run(c.name+"/impl=baseline", func(b *testing.B) {
			benchWrite(b, newBaseline(b), c.id, files)
		})
	}
}

func benchWrite(b *testing.B, l dirLayout, id func(int64) int64, files map[string][]byte) {
	settle()
	b.ReportAllocs()
	var i int64
	for b.Loop() {
		i++
		if _, err := l.Write(id(i), files); err != nil {
			b.Fatal(err)
		}
		if id(i) != id(i-1) {
			b.StopTimer()
			if err := l.Prune(id(i)); err != nil {
				b.Fatal(err)
			}
			if err := settleLayout(l); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
	}
}

// The disk cycle of a reconcile: Write of the new generation (32 files x
// 4 KiB), then Prune of the old, keeping only the new. Root holds one ID
// between iterations. impl=leasekit/durable removes the pruned tree before
// Prune returns (the default); durable/deferred leaves it to the
// background (DeferRemoval), and waits for what is still running at the
// end, so both time the whole work.
func BenchmarkCycle32x4K(b *testing.B) {
	files := moduleFiles()
	cycle := func(b *testing.B, l dirLayout) {
		settle()
		b.ReportAllocs()
		b.ResetTimer()
		for i := range int64(b.N) {
			if _, err := l.Write(i, files); err != nil {
				b.Fatal(err)
			}
			if err := l.Prune(i); err != nil {
				b.Fatal(err)
			}
		}
		// Deferred removals still running are part of the cost.
		if err := settleLayout(l); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("impl=leasekit/durable", func(b *testing.B) { cycle(b, leasekitLayout{newLayout(b, false), true}) })
	b.Run("impl=leasekit/durable/deferred", func(b *testing.B) {
		l := newLayout(b, false)
		l.DeferRemoval = true
		cycle(b, leasekitLayout{l, true})
	})
	b.Run("impl=leasekit/nosync", func(b *testing.B) { cycle(b, leasekitLayout{newLayout(b, true), false}) })
	b.Run("impl=baseline", func(b *testing.B) { cycle(b, newBaseline(b)) })
}

const bigRoot = 10_000

// Write of one small file as a new ID into a root that holds 10,000 other
// IDs, beside the same into an empty root: a Write's cost does not grow with
// the IDs under Root. The written directory is removed outside the timer.
func BenchmarkWriteIntoRoot(b *testing.B) {
	one := map[string][]byte{"f": []byte("x")}
	for _, ids := range []int{0, bigRoot} {
		run := func(b *testing.B, l dirLayout, dir func(int64) string) {
			for id := range int64(ids) {
				if _, err := l.Write(-id-1, one); err != nil {
					b.Fatal(err)
				}
			}
			settle()
			b.ReportAllocs()
			var i int64
			for b.Loop() {
				i++
				if _, err := l.Write(i, one); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := os.RemoveAll(dir(i)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		}
		b.Run(fmt.Sprintf("ids=%d/impl=leasekit/nosync", ids), func(b *testing.B) {
			l := newLayout(b, true)
			run(b, leasekitLayout{l, false}, l.Dir)
		})
		b.Run(fmt.Sprintf("ids=%d/impl=baseline", ids), func(b *testing.B) {
			l := newBaseline(b)
			run(b, l, l.Dir)
		})
	}
}

const manyDirs = 1000

// IDs over 1,000 directories.
func BenchmarkIDs1000(b *testing.B) {
	b.Run("impl=leasekit", func(b *testing.B) { benchIDs(b, leasekitLayout{newLayout(b, true), false}) })
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

// leasekitLayout adapts dirlife.Layout to dirLayout. Unless durable is
// set, writes skip syncing (they only set up the IDs and Prune
// benchmarks); Prune keeps the layout's own setting.
type leasekitLayout struct {
	l       dirlife.Layout[int64]
	durable bool
}

func (a leasekitLayout) Write(id int64, files map[string][]byte) (string, error) {
	w := a.l
	w.NoSync = !a.durable
	return w.Write(id, files)
}

func (a leasekitLayout) Prune(keep ...int64) error { return a.l.Prune(keep...) }
func (a leasekitLayout) IDs() ([]int64, error)     { return a.l.IDs() }
func (a leasekitLayout) Settle() error             { return a.l.Settle(context.Background()) }

// settleLayout waits for l's background removals, if it has any.
func settleLayout(l dirLayout) error {
	if s, ok := l.(interface{ Settle() error }); ok {
		return s.Settle()
	}
	return nil
}

// Prune of 1,000 one-file directories down to one; the directories are
// recreated outside the timer. impl=leasekit removes them before Prune
// returns (the default): the whole work; impl=leasekit/deferred is the
// caller's cost with DeferRemoval (the removal is waited for outside the
// timer).
func BenchmarkPrune1000(b *testing.B) {
	b.Run("impl=leasekit", func(b *testing.B) { benchPrune(b, leasekitLayout{newLayout(b, false), false}) })
	b.Run("impl=leasekit/deferred", func(b *testing.B) {
		l := newLayout(b, false)
		l.DeferRemoval = true
		benchPrune(b, leasekitLayout{l, false})
	})
	b.Run("impl=baseline", func(b *testing.B) { benchPrune(b, newBaseline(b)) })
}

func benchPrune(b *testing.B, l dirLayout) {
	one := map[string][]byte{"f": []byte("x")}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		if err := settleLayout(l); err != nil {
			b.Fatal(err)
		}
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
