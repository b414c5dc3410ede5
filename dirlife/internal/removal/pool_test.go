package removal

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestBatchLetsGoBeforeWaitersWake: a batch's Done runs before its last
// removal wakes the waiters, so a call that waited for its removals
// returns with what the batch held (a reference to the root's state) let
// go.
func TestBatchLetsGoBeforeWaitersWake(t *testing.T) {
	dir := t.TempDir()
	var entries []Garbage
	for _, n := range []string{"a", "b", "c"} {
		if err := os.MkdirAll(filepath.Join(dir, n, "d"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n, "d", "f"), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
		entries = append(entries, Garbage{Name: n, Was: n})
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	var (
		rm    Removals
		batch []*Removal
		ready = make(chan struct{}) // batch is set
		woke  int                   // removals over as Done ran
		calls int
	)
	b := Batch{Root: dir, R: r, DevOf: func(fs.FileInfo) uint64 { return 0 },
		Done: func() {
			<-ready
			calls++
			for _, x := range batch {
				select {
				case <-x.Done():
					woke++
				default:
				}
			}
		}}
	batch = rm.Start(b, entries, false)
	close(ready)
	if err := rm.Wait(context.Background(), batch, CollectOwn, dir, time.Hour); err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Fatalf("once Wait returned, Done had run %d times, want 1", calls)
	}
	if woke == len(batch) {
		t.Fatal("every removal of the batch had woken its waiters when the batch's Done ran")
	}
	if got, err := os.ReadDir(dir); err != nil || len(got) != 0 {
		t.Fatalf("after Wait, the root holds %v (%v), want nothing", got, err)
	}
}
