//go:build linux

package dirlife

import (
	"errors"
	"fmt"
	"slices"
	"strings"
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

// streamMix is TestStreamFaultsUnderConcurrency's mix: three more writes
// of ID 7, by Write and by stream, and every kind for the other IDs.
var streamMix = faultMix{
	writers: 4,
	sameKind: func(v int) int {
		if v%2 == 0 {
			return 0
		}
		return v % 3
	},
	otherKind: func(i int) int { return i % 3 },
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
					faultRound(t, k.write, streamMix, perFile, step, n)
				})
			}
		}
	}
	if rounds == 0 {
		t.Fatal("no round ran")
	}
}
