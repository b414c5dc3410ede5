//go:build linux

package dirlife

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFailedSyncKeepsLaterPublication: a Write whose root sync fails after
// it published, while another Write of the same ID publishes in between,
// returns ErrNotDurable and leaves the later publication in place and
// whole: nothing is undone, and the last to publish wins. For a new ID and
// a rewrite, by exchange and by moving aside.
func TestFailedSyncKeepsLaterPublication(t *testing.T) {
	for _, c := range []struct {
		name              string
		rewrite, fallback bool
	}{{"new", false, false}, {"rewrite", true, false}, {"rewrite/move-aside", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			l := genLayout(t)
			if c.rewrite {
				mustWrite(t, l, 7, versionFiles(7, 0))
			}
			published, later := make(chan struct{}), make(chan struct{})
			first := l
			first.faults = func(step, name string) error {
				if c.fallback && step == stepExchange {
					return unix.EINVAL
				}
				if step == stepSyncRoot {
					close(published)
					<-later
					return errInjected
				}
				return nil
			}
			second := l
			if c.fallback {
				second.faults = func(step, name string) error {
					if step == stepExchange {
						return unix.EINVAL
					}
					return nil
				}
			}
			var firstErr error
			var wg sync.WaitGroup
			wg.Go(func() { _, firstErr = first.Write(7, versionFiles(7, 1)) })
			<-published
			_, secondErr := second.Write(7, versionFiles(7, 2))
			close(later)
			wg.Wait()
			if secondErr != nil {
				t.Fatalf("the later Write = %v", secondErr)
			}
			var nd *notDurableError
			if !errors.Is(firstErr, ErrNotDurable) || !errors.As(firstErr, &nd) || nd.Dir != l.Dir(7) {
				t.Fatalf("the Write whose sync failed = %v, want a notDurableError for %s", firstErr, l.Dir(7))
			}
			settle(t, l)
			if got := readTree(t, l.Dir(7)); !sameFiles(got, versionFiles(7, 2)) {
				t.Fatalf("gen-7 = %v, want the later Write's files", keys(got))
			}
			if left := leftovers(t, l.Root); len(left) != 0 {
				t.Fatalf("leftovers %v", left)
			}
		})
	}
}

// TestWriteFaultsUnderConcurrency fails each step of a Write, at its first
// and last occurrence, while other Writes of the same and other IDs,
// Prunes and readers run on the root. After each round: a reader never
// saw a partial directory; the ID's directory holds the files of a Write
// that published (one that succeeded, or reported ErrNotDurable), never
// those of one that failed before publishing nor the version from before
// the round; a failed root sync reports ErrNotDurable with the directory
// published; and Prune then leaves nothing but the kept directory.
func TestWriteFaultsUnderConcurrency(t *testing.T) {
	steps := []string{stepMkdir, stepCreate, stepWrite, stepSync, stepSyncDir, stepExchange, stepRename, stepSyncRoot, stepRemove}
	rounds := 0
	for _, perFile := range []bool{false, true} {
		for _, step := range steps {
			// Count the step's occurrences in an undisturbed rewrite.
			rec := newRecorder()
			l := genLayout(t)
			l.PerFileSync = perFile
			mustWrite(t, l, 7, versionFiles(7, 0))
			l.faults = rec.hook
			mustWrite(t, l, 7, versionFiles(7, 1))
			occurrences := slices.Compact([]int{1, rec.counts[step]})
			if rec.counts[step] == 0 {
				continue
			}
			for _, n := range occurrences {
				t.Run(fmt.Sprintf("perfile=%v/%s#%d", perFile, step, n), func(t *testing.T) {
					rounds++
					faultRound(t, streamKinds[0].write, writeMix, perFile, step, n)
				})
			}
		}
	}
	if rounds == 0 {
		t.Fatal("no round ran")
	}
}

// A faultMix is what a fault round runs beside its faulty write of ID 7,
// version 1: how many writes of ID 7 in all, and which of streamKinds
// writes each later version v of ID 7 and the i-th write of another ID.
type faultMix struct {
	writers   int
	sameKind  func(v int) int
	otherKind func(i int) int
}

// writeMix is TestWriteFaultsUnderConcurrency's mix: every write by Write.
var writeMix = faultMix{writers: 3, sameKind: func(int) int { return 0 }, otherKind: func(int) int { return 0 }}

// faultRound runs one round of the fault tests under concurrency: the
// write faulty of ID 7 that fails step at its nth occurrence, beside the
// writes of mix, Prunes that keep 7 and a reader of 7, and checks what
// TestWriteFaultsUnderConcurrency promises.
func faultRound(t *testing.T, faulty func(Layout[int64], int64, Tree, StreamOptions) (Written, error), mix faultMix, perFile bool, step string, n int) {
	l := genLayout(t)
	l.PerFileSync = perFile
	mustWrite(t, l, 7, versionFiles(7, 0))

	fl := l
	fl.faults = newRecorder().failAt(step, n, errInjected).hook
	writers := mix.writers // version 1 is the faulty write's, 2.. the others'
	errs := make([]error, writers+1)
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() { _, errs[1] = faulty(fl, 7, treeOf(versionFiles(7, 1)), StreamOptions{}) })
	for v := 2; v <= writers; v++ {
		wg.Go(func() {
			_, errs[v] = streamKinds[mix.sameKind(v)].write(l, 7, treeOf(versionFiles(7, v)), StreamOptions{})
		})
	}
	var others sync.WaitGroup
	others.Go(func() { // other IDs
		for i := range 6 {
			id := int64(i % 3)
			if _, err := streamKinds[mix.otherKind(i)].write(l, id, treeOf(versionFiles(id, i%3)), StreamOptions{}); err != nil {
				t.Errorf("write(%d): %v", id, err)
			}
		}
	})
	others.Go(func() { // Prunes that keep 7
		for i := range 4 {
			if err := l.Prune(7, int64(i%3)); err != nil {
				t.Errorf("Prune: %v", err)
			}
		}
	})
	others.Go(func() { // a reader of 7
		for {
			select {
			case <-done:
				return
			default:
			}
			files, err := readPublished(l.Dir(7))
			switch {
			case errors.Is(err, errMovedAway):
			case err != nil:
				t.Errorf("reading gen-7: %v", err)
				return
			default:
				if v, ok := versionOf(files); !ok || !sameFiles(files, versionFiles(7, v)) {
					t.Errorf("a reader saw a partial gen-7: %v", keys(files))
					return
				}
			}
		}
	})
	wg.Wait()
	close(done)
	others.Wait()
	if t.Failed() {
		return
	}

	published := map[int]bool{}
	for v := 1; v <= writers; v++ {
		switch err := errs[v]; {
		case err == nil || errors.Is(err, ErrNotDurable):
			published[v] = true
		case v == 1 && errors.Is(err, errInjected):
		default:
			t.Fatalf("write of version %d: %v", v, err)
		}
	}
	if step == stepSyncRoot && !errors.Is(errs[1], ErrNotDurable) {
		t.Fatalf("the faulty write = %v, want ErrNotDurable", errs[1])
	}
	if step == stepRemove && errs[1] != nil {
		t.Fatalf("the faulty write = %v, want success: its removal comes after publication", errs[1])
	}
	files := readTree(t, l.Dir(7))
	v, ok := versionOf(files)
	if !ok || !sameFiles(files, versionFiles(7, v)) {
		t.Fatalf("gen-7 is partial: %v", keys(files))
	}
	if !published[v] {
		t.Fatalf("gen-7 holds version %d; the writes that published are %v", v, published)
	}
	if err := l.Prune(7); err != nil {
		t.Fatal(err)
	}
	settle(t, l)
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-7"}) {
		t.Fatalf("root after Prune(7) = %v", got)
	}
}

// versionOf returns the version a versionFiles directory's manifest names.
func versionOf(files Files) (int, bool) {
	m := strings.Fields(string(files["MANIFEST"]))
	if len(m) != 3 {
		return 0, false
	}
	v, err := strconv.Atoi(m[1])
	return v, err == nil
}

// TestPruneWaitsForLiveWrite: a Prune that starts while a Write is filling
// its staging directory, and while earlier garbage is still being removed
// in the background, waits for the Write: the staging directory is never
// removed under it, and the Write publishes complete.
func TestPruneWaitsForLiveWrite(t *testing.T) {
	l := genLayout(t)
	for id := range int64(6) {
		mustWrite(t, l, id, versionFiles(id, 3))
	}
	if err := l.Prune(); err != nil { // garbage for the background remover
		t.Fatal(err)
	}
	staging, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	writer := l
	writer.faults = func(step, name string) error {
		if step == stepCreate {
			once.Do(func() { close(staging); <-resume })
		}
		return nil
	}
	var writeErr error
	var wg sync.WaitGroup
	wg.Go(func() { _, writeErr = writer.Write(7, versionFiles(7, 5)) })
	<-staging
	pruned := make(chan error, 1)
	go func() { pruned <- l.Prune(7) }()
	select {
	case err := <-pruned:
		t.Fatalf("Prune returned (%v) while a Write was staging", err)
	default:
	}
	close(resume)
	wg.Wait()
	if writeErr != nil {
		t.Fatalf("Write = %v", writeErr)
	}
	if err := <-pruned; err != nil {
		t.Fatal(err)
	}
	settle(t, l)
	checkComplete(t, l.Dir(7), 7)
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-7"}) {
		t.Fatalf("root = %v, want [gen-7]", got)
	}
}
