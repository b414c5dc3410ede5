//go:build linux

package dirlife

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// streamSteps are the steps a streamed write may take, in order.
var streamSteps = []string{stepOwnerAttr, stepMkdir, stepFill, stepCreate, stepWrite, stepHash, stepSync, stepSyncDir, stepExchange, stepRename, stepSyncRoot, stepRemove}

// TestStreamFaults fails each step of a streamed write and of a copy, at
// each of its occurrences, in new and rewrite scenarios under every sync
// mode, as TestWriteFaults does for Write: the error is returned and names
// the directory, no partial directory appears, an existing one is intact
// and Prune then leaves nothing else; a failed root sync publishes and
// reports ErrNotDurable; a failed hand-over of the replaced copy leaves it
// for Prune, the write having succeeded.
func TestStreamFaults(t *testing.T) {
	tree := treeOf(newFiles)
	for _, k := range streamKinds[1:] {
		for _, s := range scenarios() {
			t.Run(k.name+"/"+s.name, func(t *testing.T) {
				rec := newRecorder()
				l := s.layout(t, rec)
				if _, err := k.write(l, 7, tree, StreamOptions{}); err != nil {
					t.Fatal(err)
				}
				counts := rec.counts
				if counts[stepFill] != 1 {
					t.Fatalf("%d fills, want 1: %v", counts[stepFill], rec.events)
				}
				var before Files
				if s.rewrite {
					before = oldFiles
				}
				for _, step := range streamSteps {
					for n := 1; n <= counts[step]; n++ {
						t.Run(fmt.Sprintf("%s#%d", step, n), func(t *testing.T) {
							rec := newRecorder().failAt(step, n, errInjected)
							l := s.layout(t, rec)
							w, err := k.write(l, 7, tree, StreamOptions{})
							switch step {
							case stepSyncRoot:
								var nd *notDurableError
								if !errors.As(err, &nd) || !errors.Is(err, errInjected) || nd.Dir != l.Dir(7) || !w.Published {
									t.Fatalf("write with a failed root sync = %+v, %v, want a published notDurableError", w, err)
								}
								checkState(t, l, newFiles)
								return
							case stepRemove:
								settle(t, l)
								if err != nil || !w.Published {
									t.Fatalf("write with a failed removal of the old copy = %v, want success", err)
								}
								checkState(t, l, newFiles)
								return
							}
							if !errors.Is(err, errInjected) || w.Published {
								t.Fatalf("write = %+v, %v, want the injected fault", w, err)
							}
							if !strings.Contains(err.Error(), l.Dir(7)) {
								t.Fatalf("error %q does not name the directory", err)
							}
							checkState(t, l, before)
						})
					}
				}
			})
		}
	}
}

// TestStreamFaultsUnderConcurrency fails each step of a streamed write
// (syncing the filesystem) and of a copy (syncing file by file), at its
// first and last occurrence, while Writes and
// streamed writes of the same and other IDs, Prunes and a reader run on
// the root: the checks of TestWriteFaultsUnderConcurrency.
func TestStreamFaultsUnderConcurrency(t *testing.T) {
	rounds := 0
	for i, k := range streamKinds[1:] {
		perFile := i == 1 // a stream under syncfs, a copy file by file
		for _, step := range streamSteps[1:] {
			rec := newRecorder()
			l := genLayout(t)
			l.PerFileSync = perFile
			mustWrite(t, l, 7, versionFiles(7, 0))
			l.faults = rec.hook
			if _, err := k.write(l, 7, treeOf(versionFiles(7, 1)), StreamOptions{}); err != nil {
				t.Fatal(err)
			}
			if rec.counts[step] == 0 {
				continue
			}
			for _, n := range slices.Compact([]int{1, rec.counts[step]}) {
				t.Run(fmt.Sprintf("%s/perfile=%v/%s#%d", k.name, perFile, step, n), func(t *testing.T) {
					rounds++
					streamFaultRound(t, k.write, perFile, step, n)
				})
			}
		}
	}
	if rounds == 0 {
		t.Fatal("no round ran")
	}
}

func streamFaultRound(t *testing.T, write func(Layout[int64], int64, Tree, StreamOptions) (Written, error), perFile bool, step string, n int) {
	l := genLayout(t)
	l.PerFileSync = perFile
	mustWrite(t, l, 7, versionFiles(7, 0))

	faulty := l
	faulty.faults = newRecorder().failAt(step, n, errInjected).hook
	const writers = 4 // version 1 is the faulty write's, 2.. the others'
	errs := make([]error, writers+1)
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Go(func() { _, errs[1] = write(faulty, 7, treeOf(versionFiles(7, 1)), StreamOptions{}) })
	for v := 2; v <= writers; v++ {
		wg.Go(func() {
			if v%2 == 0 {
				_, errs[v] = l.Write(7, versionFiles(7, v))
			} else {
				_, errs[v] = streamKinds[v%3].write(l, 7, treeOf(versionFiles(7, v)), StreamOptions{})
			}
		})
	}
	var others sync.WaitGroup
	others.Go(func() { // other IDs, streamed
		for i := range 6 {
			id := int64(i % 3)
			if _, err := streamKinds[i%3].write(l, id, treeOf(versionFiles(id, i%3)), StreamOptions{}); err != nil {
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
