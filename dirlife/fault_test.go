//go:build linux

package dirlife

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
	"leasekit.dev/dirlife/internal/names"
)

var errInjected = errors.New("injected fault")

// recorder is a fault seam that records every step and fails the n-th call
// of one step.
type recorder struct {
	mu     sync.Mutex
	events []string // "step name"
	counts map[string]int
	fail   map[string]map[int]error // step -> occurrence (1-based) -> error
}

func newRecorder() *recorder {
	return &recorder{counts: map[string]int{}, fail: map[string]map[int]error{}}
}

func (r *recorder) failAt(step string, n int, err error) *recorder {
	if r.fail[step] == nil {
		r.fail[step] = map[int]error{}
	}
	r.fail[step][n] = err
	return r
}

// took returns the first event recorded of a step whose name begins with
// one of prefixes, and whether there was one.
func (r *recorder) took(prefixes ...string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range r.events {
		for _, p := range prefixes {
			if strings.HasPrefix(e, p) {
				return e, true
			}
		}
	}
	return "", false
}

func (r *recorder) hook(step, name string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.counts[step]++
	r.events = append(r.events, step+" "+name)
	return r.fail[step][r.counts[step]]
}

var (
	oldFiles = Files{"m/a.cue": []byte("old a"), "m/n/b.cue": []byte("old b"), "top": []byte("old")}
	newFiles = Files{"m/a.cue": []byte("new a"), "x/y/c.cue": []byte("new c"), "top": []byte("new"), "z": nil}
)

type scenario struct {
	name    string
	rewrite bool // an old directory exists
	noSync  bool
	perFile bool
}

func scenarios() []scenario {
	var out []scenario
	for _, rewrite := range []bool{false, true} {
		for _, c := range []struct {
			name    string
			noSync  bool
			perFile bool
		}{{"nosync", true, false}, {"syncfs", false, false}, {"syncfiles", false, true}} {
			n := "new/" + c.name
			if rewrite {
				n = "rewrite/" + c.name
			}
			out = append(out, scenario{n, rewrite, c.noSync, c.perFile})
		}
	}
	return out
}

func (s scenario) layout(t *testing.T, rec *recorder) Layout[int64] {
	t.Helper()
	l := genLayout(t)
	l.NoSync, l.PerFileSync = s.noSync, s.perFile
	if s.rewrite {
		mustWrite(t, l, 7, oldFiles)
	}
	if rec != nil {
		l.faults = rec.hook
	}
	return l
}

// checkState checks that ID 7 is as before a failed Write (absent, or
// complete with the old files) or as after a successful one, that nothing
// partial is listed, and that Prune leaves only kept directories.
func checkState(t *testing.T, l Layout[int64], want Files) {
	t.Helper()
	ids, err := l.IDs()
	if err != nil {
		t.Fatal(err)
	}
	if want == nil {
		if len(ids) != 0 {
			t.Fatalf("IDs() = %v, want none", ids)
		}
	} else {
		if !slices.Equal(ids, []int64{7}) {
			t.Fatalf("IDs() = %v, want [7]", ids)
		}
		if got := readTree(t, l.Dir(7)); !sameFiles(got, want) {
			t.Fatalf("Dir(7) = %v, want %v", got, want)
		}
	}
	l.faults = nil
	if err := l.Prune(7); err != nil {
		t.Fatal(err)
	}
	settle(t, l)
	if left := leftovers(t, l.Root); len(left) != 0 {
		t.Fatalf("Prune left %v", left)
	}
}

// strandedLayout returns a layout whose ID 7 a rewrite left stranded: the
// rename into place and the move back both failed, so the old copy is
// moved aside, the new one in its staging directory, and 7's path empty.
func strandedLayout(t *testing.T) Layout[int64] {
	t.Helper()
	rec := newRecorder().failAt(stepExchange, 1, unix.EINVAL).failAt(stepRename, 3, errInjected).failAt(stepRename, 4, errInjected)
	l := scenario{rewrite: true}.layout(t, rec)
	if _, err := l.Write(7, newFiles); !errors.Is(err, errInjected) {
		t.Fatalf("Write = %v, want the injected fault", err)
	}
	l.faults = nil
	checkIDs(t, l)
	return l
}

// checkNoneHeld fails if Root holds a moved-aside copy that a Prune could
// restore.
func checkNoneHeld(t *testing.T, l Layout[int64]) {
	t.Helper()
	for _, n := range rootEntries(t, l.Root) {
		if isHeld(n) {
			t.Fatalf("Root holds %s, a copy a Prune could restore: %v", n, rootEntries(t, l.Root))
		}
	}
}

// TestWriteFaults fails each step of a Write, at each of its occurrences,
// in new and rewrite scenarios under every sync mode: the Write returns the
// error, no partial directory appears, and an existing one is intact. A
// failure after publication is the exception: a failure to hand the
// replaced copy to the remover leaves it for Prune, and the Write has
// succeeded; a failed sync of the root leaves the new directory published
// (never undone) and reports ErrNotDurable.
func TestWriteFaults(t *testing.T) {
	for _, s := range scenarios() {
		t.Run(s.name, func(t *testing.T) {
			rec := newRecorder()
			l := s.layout(t, rec)
			mustWrite(t, l, 7, newFiles)
			counts := rec.counts

			var before Files
			if s.rewrite {
				before = oldFiles
			}
			steps := []string{stepOwnerAttr, stepMkdir, stepCreate, stepWrite, stepSync, stepSyncDir, stepExchange, stepRename, stepSyncRoot, stepRemove}
			for _, step := range steps {
				for n := 1; n <= counts[step]; n++ {
					t.Run(fmt.Sprintf("%s#%d", step, n), func(t *testing.T) {
						rec := newRecorder().failAt(step, n, errInjected)
						l := s.layout(t, rec)
						_, err := l.Write(7, newFiles)
						if step == stepSyncRoot {
							var nd *notDurableError
							if !errors.Is(err, ErrNotDurable) || !errors.Is(err, errInjected) || !errors.As(err, &nd) || nd.Dir != l.Dir(7) {
								t.Fatalf("Write with a failed root sync = %v, want a notDurableError for %s", err, l.Dir(7))
							}
							checkState(t, l, newFiles)
							return
						}
						if step == stepRemove {
							settle(t, l)
							if err != nil {
								t.Fatalf("Write with a failed removal of the old copy = %v, want success", err)
							}
							if len(leftovers(t, l.Root)) != 1 {
								t.Fatalf("want the replaced copy left behind, have %v", leftovers(t, l.Root))
							}
							checkState(t, l, newFiles)
							return
						}
						if !errors.Is(err, errInjected) {
							t.Fatalf("Write = %v, want the injected fault", err)
						}
						if !strings.Contains(err.Error(), l.Dir(7)) {
							t.Fatalf("error %q does not name the directory", err)
						}
						checkState(t, l, before)
					})
				}
			}
			if s.rewrite && counts[stepExchange] == 0 {
				t.Fatal("a rewrite did not use the exchange")
			}
		})
	}
}

// TestExchangeFallback: where the filesystem refuses RENAME_EXCHANGE, a
// rewrite moves the old directory aside, and every step of that path,
// rollback included, is checked.
func TestExchangeFallback(t *testing.T) {
	for _, errno := range []error{unix.EINVAL, unix.ENOSYS, unix.EOPNOTSUPP} {
		t.Run(errno.Error(), func(t *testing.T) {
			rec := newRecorder().failAt(stepExchange, 1, errno)
			l := scenario{rewrite: true}.layout(t, rec)
			mustWrite(t, l, 7, newFiles)
			if !slices.ContainsFunc(rec.events, func(e string) bool { return strings.HasPrefix(e, stepRename+" "+asidePrefix) }) {
				t.Fatalf("no move-aside rename among %v", rec.events)
			}
			checkState(t, l, newFiles)
		})
	}

	// Rename calls on the fallback path: 1 publication (refused: exists),
	// 2 target -> aside, 3 staging -> target, 4 aside -> target (rollback).
	for name, rename := range map[string]int{"move aside fails": 2, "rename into place fails": 3} {
		t.Run(name, func(t *testing.T) {
			rec := newRecorder().failAt(stepExchange, 1, unix.EINVAL).failAt(stepRename, rename, errInjected)
			l := scenario{rewrite: true}.layout(t, rec)
			if _, err := l.Write(7, newFiles); !errors.Is(err, errInjected) {
				t.Fatalf("Write = %v, want the injected fault", err)
			}
			checkState(t, l, oldFiles)
		})
	}
	t.Run("rollback fails", func(t *testing.T) {
		rollback := errors.New("rollback fault")
		rec := newRecorder().failAt(stepExchange, 1, unix.EINVAL).failAt(stepRename, 3, errInjected).failAt(stepRename, 4, rollback)
		l := scenario{rewrite: true}.layout(t, rec)
		_, err := l.Write(7, newFiles)
		if !errors.Is(err, errInjected) || !errors.Is(err, rollback) || !strings.Contains(err.Error(), asidePrefix) {
			t.Fatalf("Write = %v, want both faults and the aside name", err)
		}
		// The old directory is intact, under its aside name; the new one,
		// complete, stays in its staging directory (the ID's path is
		// empty, so neither copy is removed), and no partial directory is
		// listed.
		left := leftovers(t, l.Root)
		if len(left) != 2 || !strings.HasPrefix(left[0], asidePrefix) || !strings.HasPrefix(left[1], stagePrefix) {
			t.Fatalf("leftovers = %v, want the aside copy and the staging directory", left)
		}
		if got := readTree(t, l.Root+"/"+left[0]); !sameFiles(got, oldFiles) {
			t.Fatalf("aside copy = %v, want the old files", got)
		}
		if got := readTree(t, l.Root+"/"+left[1]); !sameFiles(got, newFiles) {
			t.Fatalf("staging copy = %v, want the new files", got)
		}
		// Prune keeping 7 restores the last published copy, the old one,
		// and removes the staging directory that was never published.
		checkState(t, l, nil)
		checkIDs(t, l, 7)
		if got := readTree(t, l.Dir(7)); !sameFiles(got, oldFiles) {
			t.Fatalf("Dir(7) after Prune(7) = %v, want the old files", got)
		}
	})
	t.Run("rollback fails, then Prune without the ID", func(t *testing.T) {
		l := strandedLayout(t)
		mustPrune(t, l)
		checkRootHolds(t, l)
		mustPrune(t, l, 7)
		checkIDs(t, l)
	})
	t.Run("rollback fails, then a Write of the ID", func(t *testing.T) {
		l := strandedLayout(t)
		newest := Files{"newest": []byte("published last")}
		mustWrite(t, l, 7, newest)
		mustPrune(t, l, 7)
		if got := readTree(t, l.Dir(7)); !sameFiles(got, newest) {
			t.Fatalf("Dir(7) = %v, want the last published %v", got, newest)
		}
		checkRootHolds(t, l, "gen-7")
	})
	t.Run("a completed fallback leaves no copy to restore", func(t *testing.T) {
		// 4 renames the old copy to a plain garbage name; the remover
		// is kept from it, as by a crash before it ran.
		rec := newRecorder().failAt(stepExchange, 1, unix.EINVAL).failAt(stepRemove, 1, errInjected)
		l := scenario{rewrite: true}.layout(t, rec)
		mustWrite(t, l, 7, newFiles)
		if rec.counts[stepRename] != 4 {
			t.Fatalf("%d renames, want 4: %v", rec.counts[stepRename], rec.events)
		}
		checkNoneHeld(t, l)
		mustPrune(t, l)
		mustPrune(t, l, 7)
		checkIDs(t, l)
	})
	t.Run("renaming the replaced copy to garbage fails", func(t *testing.T) {
		rec := newRecorder().failAt(stepExchange, 1, unix.EINVAL).failAt(stepRename, 4, errInjected)
		l := scenario{rewrite: true}.layout(t, rec)
		mustWrite(t, l, 7, newFiles) // published all the same
		checkIDs(t, l, 7)
		if got := readTree(t, l.Dir(7)); !sameFiles(got, newFiles) {
			t.Fatalf("Dir(7) = %v, want the new files", got)
		}
		// The old copy, under its recording name, is garbage: 7's path is
		// full; and once 7 is pruned, it is never restored.
		mustPrune(t, l)
		checkRootHolds(t, l)
		mustPrune(t, l, 7)
		checkIDs(t, l)
	})
	t.Run("root sync fails after the fallback", func(t *testing.T) {
		rec := newRecorder().failAt(stepExchange, 1, unix.EINVAL)
		l := scenario{rewrite: true}.layout(t, rec)
		rec.failAt(stepSyncRoot, 1, errInjected)
		dir, err := l.Write(7, newFiles)
		if !errors.Is(err, errInjected) || !errors.Is(err, ErrNotDurable) || dir != l.Dir(7) {
			t.Fatalf("Write = %q, %v, want the directory and ErrNotDurable", dir, err)
		}
		checkState(t, l, newFiles)
	})
}

// TestSyncOrder: every file and staging directory is synced before the
// rename that publishes it, and the root after.
func TestSyncOrder(t *testing.T) {
	for _, s := range scenarios() {
		if s.noSync {
			continue
		}
		t.Run(s.name, func(t *testing.T) {
			rec := newRecorder()
			l := s.layout(t, rec)
			mustWrite(t, l, 7, newFiles)
			publish := slices.IndexFunc(rec.events, func(e string) bool {
				return e == stepExchange+" gen-7" || (!s.rewrite && e == stepRename+" gen-7")
			})
			if publish < 0 {
				t.Fatalf("no publication among %v", rec.events)
			}
			var syncs, creates int
			for i, e := range rec.events {
				step, _, _ := strings.Cut(e, " ")
				switch {
				case step == stepCreate:
					creates++
				case step == stepSync:
					syncs++
					if i > publish {
						t.Fatalf("%q after the publication: %v", e, rec.events)
					}
				case step == stepSyncDir:
					if i > publish {
						t.Fatalf("%q after the publication: %v", e, rec.events)
					}
				case step == stepSyncRoot:
					if i < publish {
						t.Fatalf("root synced before the publication: %v", rec.events)
					}
				}
			}
			if last := rec.events[len(rec.events)-1]; s.rewrite && last != stepRemove+" "+strings.Fields(rec.events[publish])[0] && !strings.HasPrefix(last, stepRemove) {
				t.Fatalf("last step %q, want the removal of the old copy", last)
			}
			if !slices.Contains(rec.events, stepSyncRoot+" .") {
				t.Fatalf("root never synced: %v", rec.events)
			}
			switch {
			case s.perFile:
				if syncs != creates {
					t.Fatalf("%d file syncs for %d files", syncs, creates)
				}
			default:
				if syncs != 1 {
					t.Fatalf("%d syncfs calls, want 1", syncs)
				}
			}
		})
	}
}

// TestRecorderTook: took finds a recorded event by the beginning of its
// step's name, and finds none where no step begins so.
func TestRecorderTook(t *testing.T) {
	rec := newRecorder()
	if err := rec.hook(stepRename, "gen-1"); err != nil {
		t.Fatal(err)
	}
	if e, ok := rec.took("sync", stepRename); !ok || e != stepRename+" gen-1" {
		t.Fatalf("took(sync, %s) = %q, %v; want the rename", stepRename, e, ok)
	}
	if e, ok := rec.took("sync"); ok {
		t.Fatalf("took(sync) = %q with no sync recorded", e)
	}
}

// TestNoSyncSyncsNothing: with NoSync, no step syncs.
func TestNoSyncSyncsNothing(t *testing.T) {
	rec := newRecorder()
	l := scenario{rewrite: true, noSync: true}.layout(t, rec)
	mustWrite(t, l, 7, newFiles)
	if _, ok := rec.took("sync"); ok {
		t.Fatalf("NoSync Write synced: %v", rec.events)
	}
}

// isHeld reports whether entry is a moved-aside copy that records its ID.
func isHeld(entry string) bool {
	_, _, ok := names.ParseHeld(entry)
	return ok
}
