package dirlife

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"pgregory.net/rapid"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/removal"
	"leasekit.dev/dirlife/internal/sys"
)

// errRemovalFault is the cause of the removal failures the tests inject.
var errRemovalFault = errors.New("injected removal failure")

// failingRemovals returns a fault seam under which every removal of a
// garbage entry waits for gate and then, while fail is set, fails with a
// *fs.PathError wrapping errRemovalFault, leaving the entry whole. It
// counts the attempts in attempts.
func failingRemovals(gate <-chan struct{}, fail *atomic.Bool, attempts *atomic.Int32) faultFunc {
	return func(step, name string) error {
		if step != removal.StepRemoveTree {
			return nil
		}
		attempts.Add(1)
		<-gate
		if fail.Load() {
			return &fs.PathError{Op: "unlinkat", Path: name, Err: errRemovalFault}
		}
		return nil
	}
}

// leaves returns the errors err joins, each with its wrapping: err itself
// when it joins none.
func leaves(err error) []error {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}

// TestConcurrentPrunesShareAFailedRemoval: N Prunes at once to the same
// keep set, whose one garbage entry's removal fails. The first to take the
// lock starts the removal; the others find it under way and wait for it:
// none returns before it is over, no second attempt starts, and every one
// returns its failure (errors.Is its cause, errors.As its *fs.PathError,
// naming Root), not nil. The entry stays, under its aside name, and the
// next Prune removes it.
func TestConcurrentPrunesShareAFailedRemoval(t *testing.T) {
	for _, n := range []int{2, 3, 8} {
		t.Run(fmt.Sprintf("prunes=%d", n), func(t *testing.T) {
			waitRemoversIdle(t)
			synctest.Test(t, func(t *testing.T) {
				gate := make(chan struct{})
				open := sync.OnceFunc(func() { close(gate) })
				defer open() // also when the test fails: no removal stays blocked
				var fail atomic.Bool
				var attempts atomic.Int32
				fail.Store(true)
				l := genLayout(t)
				l.NoSync = true
				mustWrite(t, l, 1, versionFiles(1, 1))
				mustWrite(t, l, 2, versionFiles(2, 1))
				l.faults = failingRemovals(gate, &fail, &attempts)

				errs := make(chan error, n)
				for range n {
					go func() { errs <- l.Prune(1) }()
				}
				synctest.Wait() // each Prune has set aside gen-2 or found it under way
				if len(errs) > 0 {
					t.Fatalf("%d of %d Prunes returned while gen-2's removal was under way; one returned %v", len(errs), n, <-errs)
				}
				open()
				for i := range n {
					err := <-errs
					var pe *fs.PathError
					if !errors.Is(err, errRemovalFault) || !errors.As(err, &pe) || !strings.Contains(err.Error(), l.Root) {
						t.Errorf("Prune %d of %d = %v, want gen-2's removal failure, naming %s", i+1, n, err, l.Root)
					}
					if len(leaves(err)) != 1 {
						t.Errorf("Prune %d of %d = %v, want the one failure", i+1, n, err)
					}
				}
				if a := attempts.Load(); a != 1 {
					t.Errorf("%d attempts at gen-2's removal, want 1", a)
				}
				left := leftovers(t, l.Root)
				if len(left) != 1 || !names.IsPlainAside(left[0]) {
					t.Fatalf("leftovers %v, want gen-2 under an aside name", left)
				}
				if err := l.Settle(context.Background()); err != nil {
					t.Fatalf("Settle = %v, want nil: the failure reached every caller that waited", err)
				}
				fail.Store(false)
				if err := l.Prune(1); err != nil {
					t.Fatalf("a later Prune = %v", err)
				}
				if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-1"}) {
					t.Fatalf("Root = %v, want [gen-1]", got)
				}
			})
		})
	}
}

// TestPruneStopsWaitingAlone: of a Prune that started a removal and two
// that found it under way, the one whose wait ends first (its deadline:
// a *StalledError naming the entry; its ctx: ctx's error) returns then,
// and leaves the removal running for the others, which both return the
// removal's failure once it fails. The failure reached them, so the
// root's report does not hold it.
func TestPruneStopsWaitingAlone(t *testing.T) {
	const long, short = time.Hour, 10 * time.Minute
	for _, c := range []struct {
		name     string
		stopping int  // whose wait ends first: 0, the owner; 1, a joiner
		byCtx    bool // ends by ctx rather than by its deadline
	}{
		{"joiner/deadline", 1, false},
		{"joiner/ctx", 1, true},
		{"owner/deadline", 0, false},
		{"owner/ctx", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			waitRemoversIdle(t)
			synctest.Test(t, func(t *testing.T) {
				gate := make(chan struct{})
				open := sync.OnceFunc(func() { close(gate) })
				defer open()
				var fail atomic.Bool
				var attempts atomic.Int32
				fail.Store(true)
				l := genLayout(t)
				l.NoSync = true
				l.RemovalDeadline = long
				mustWrite(t, l, 1, versionFiles(1, 1))
				mustWrite(t, l, 2, versionFiles(2, 1))
				l.faults = failingRemovals(gate, &fail, &attempts)

				// Prune i of three: 0 sets gen-2 aside and starts its
				// removal, 1 and 2 find it under way; c.stopping stops
				// after short.
				start := time.Now()
				errs := make([]chan error, 3)
				for i := range errs {
					errs[i] = make(chan error, 1)
					p, ctx := l, context.Background()
					if i == c.stopping {
						if c.byCtx {
							var cancel context.CancelFunc
							ctx, cancel = context.WithTimeout(ctx, short)
							defer cancel()
						} else {
							p.RemovalDeadline = short
						}
					}
					go func() { errs[i] <- p.prune(ctx, 1) }()
					synctest.Wait()
				}
				for i := range errs {
					select {
					case err := <-errs[i]:
						t.Fatalf("Prune %d returned %v while gen-2's removal was under way", i, err)
					default:
					}
				}

				err := <-errs[c.stopping]
				if d := time.Since(start); d != short {
					t.Fatalf("Prune %d returned after %v, want %v", c.stopping, d, short)
				}
				var se *StalledError
				switch {
				case c.byCtx && !errors.Is(err, context.DeadlineExceeded):
					t.Fatalf("Prune %d, its ctx ended = %v, want ctx's error", c.stopping, err)
				case !c.byCtx && (!errors.As(err, &se) || len(se.Entries) != 1 || se.Entries[0].Name != "gen-2" || !names.IsPlainAside(se.Entries[0].Aside)):
					t.Fatalf("Prune %d past its deadline = %v, want a StalledError naming gen-2 under its aside name", c.stopping, err)
				}
				if errors.Is(err, errRemovalFault) {
					t.Fatalf("Prune %d = %v, before the removal failed", c.stopping, err)
				}
				synctest.Wait()
				for i := range errs {
					select {
					case err := <-errs[i]:
						t.Fatalf("Prune %d returned %v while the removal was under way", i, err)
					default:
					}
				}

				open()
				for i := range errs {
					if i == c.stopping {
						continue
					}
					if err := <-errs[i]; !errors.Is(err, errRemovalFault) || len(leaves(err)) != 1 {
						t.Errorf("Prune %d, still waiting = %v, want gen-2's removal failure", i, err)
					}
				}
				if a := attempts.Load(); a != 1 {
					t.Fatalf("%d attempts at gen-2's removal, want 1", a)
				}
				if err := l.Settle(context.Background()); err != nil {
					t.Fatalf("Settle = %v, want nil: the failure reached the calls waiting", err)
				}
				fail.Store(false)
				if err := l.Prune(1); err != nil {
					t.Fatalf("a later Prune = %v", err)
				}
				if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-1"}) {
					t.Fatalf("Root = %v, want [gen-1]", got)
				}
			})
		})
	}
}

// A removalFault is a removal failure the rapid test injects: of the
// entry holding version v, under its aside name.
type removalFault struct {
	v     int
	aside string
}

func (f *removalFault) Error() string {
	return fmt.Sprintf("injected failure removing version %d (%s)", f.v, f.aside)
}

// manifestVersion returns the version that the MANIFEST of a directory
// names, as versionFiles writes it: "<id> <version> <files>".
func manifestVersion(dir string) (int, bool) {
	data, err := os.ReadFile(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		return 0, false
	}
	m := strings.Fields(string(data))
	if len(m) != 3 {
		return 0, false
	}
	v, err := strconv.Atoi(m[1])
	return v, err == nil
}

// versionsIn returns the versions Root holds, each with its entry's name:
// an ID's directory or an aside name. An entry being removed may be
// missed.
func versionsIn(root string) (map[int]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, e := range entries {
		if v, ok := manifestVersion(filepath.Join(root, e.Name())); ok {
			out[v] = e.Name()
		}
	}
	return out, nil
}

// TestConcurrentPrunesReportEveryFailure runs random Writes and, between
// them, two to four Prunes at once with random keep sets, whose removals
// fail for random versions. Sometimes the removals are held until every
// Prune waits, so that the Prunes overlap as much as they can, and then
// until the deadline of those Prunes whose deadline is short has passed.
// Every Prune must remove the entries it found in Root that it does not
// keep, the copies whose removal failed before included; at the instant
// it returns, every one of those still in Root is named by one of its
// errors (a removal's failure, or a StalledError), so that it returns nil
// only when all are gone; and its errors are those, each of an entry that
// some Prune does not keep (set aside by one, it is garbage to all), no
// others. After
// each round, Root holds the IDs every Prune kept and the entries whose
// last removal failed. Each step runs in a synctest bubble of its own.
func TestConcurrentPrunesReportEveryFailure(tt *testing.T) {
	waitRemoversIdle(tt)
	// bubble runs f in a bubble, returning once every goroutine it started
	// (the removal goroutines included) is done. f must not fail the test.
	bubble := func(f func()) { synctest.Test(tt, func(*testing.T) { f() }) }
	tmp := tt.TempDir()
	rapid.Check(tt, func(t *rapid.T) {
		base, err := os.MkdirTemp(tmp, "case")
		if err != nil {
			t.Fatal(err)
		}
		l := Layout[int64]{Root: filepath.Join(base, "root"), Codec: IntCodec[int64]{Prefix: "gen-"}, NoSync: true}
		var mu sync.Mutex
		failing := map[int]bool{} // versions whose removals fail in this step
		var gate chan struct{}    // non-nil: removals wait for it to close
		l.faults = func(step, name string) error {
			if step != removal.StepRemoveTree {
				return nil
			}
			v, ok := manifestVersion(filepath.Join(l.Root, name))
			mu.Lock()
			fail, g := ok && failing[v], gate
			mu.Unlock()
			if g != nil {
				<-g
			}
			if fail {
				return &removalFault{v, name}
			}
			return nil
		}
		version := 0
		ids := rapid.Int64Range(1, 5)

		t.Repeat(map[string]func(*rapid.T){
			"Write": func(t *rapid.T) {
				id := ids.Draw(t, "id")
				version++
				mu.Lock()
				clear(failing) // a replaced copy goes
				gate = nil
				mu.Unlock()
				var err error
				files := Files{"MANIFEST": fmt.Appendf(nil, "%d %d d/f", id, version), "d/f": nil}
				bubble(func() { _, err = l.Write(id, files) })
				if err != nil {
					t.Fatalf("Write(%d): %v", id, err)
				}
			},
			"Prunes": func(t *rapid.T) {
				n := rapid.IntRange(2, 4).Draw(t, "prunes")
				keeps := make([][]int64, n)
				for i := range keeps {
					keeps[i] = rapid.SliceOfNDistinct(ids, 0, 4, func(id int64) int64 { return id }).Draw(t, fmt.Sprintf("keep%d", i))
				}
				fails := rapid.SliceOfDistinct(rapid.IntRange(1, max(version, 1)), func(v int) int { return v }).Draw(t, "failing")
				held := rapid.Bool().Draw(t, "held")
				deadlines := make([]time.Duration, n)
				for i := range deadlines {
					deadlines[i] = time.Hour
					if held && rapid.Bool().Draw(t, fmt.Sprintf("short%d", i)) {
						deadlines[i] = time.Minute
					}
				}
				if _, err := os.Stat(l.Root); err != nil {
					t.Skip("no root yet")
				}
				before, err := versionsIn(l.Root) // nothing is being removed now
				if err != nil {
					t.Fatal(err)
				}
				mustGo := make([]map[int]bool, n) // the versions each Prune must remove
				for i, keep := range keeps {
					mustGo[i] = map[int]bool{}
					for v, name := range before {
						if !slices.ContainsFunc(keep, func(id int64) bool { return l.Codec.Format(id) == name }) {
							mustGo[i][v] = true
						}
					}
				}
				mu.Lock()
				clear(failing)
				for _, v := range fails {
					failing[v] = true
				}
				mu.Unlock()

				type result struct {
					err  error
					left map[int]string // the versions in Root at its return
					lerr error
				}
				results := make([]result, n)
				bubble(func() {
					var g chan struct{}
					if held {
						g = make(chan struct{}) // of the bubble, so that a removal waiting for it is durably blocked
					}
					mu.Lock()
					gate = g
					mu.Unlock()
					var wg sync.WaitGroup
					for i := range n {
						wg.Go(func() {
							p := l
							p.RemovalDeadline = deadlines[i]
							err := p.Prune(keeps[i]...)
							left, lerr := versionsIn(l.Root)
							results[i] = result{err, left, lerr}
						})
					}
					if held {
						synctest.Wait()             // every Prune waits, or has returned
						time.Sleep(2 * time.Minute) // past the short deadlines
						close(g)
					}
					wg.Wait()
					mu.Lock()
					gate = nil
					mu.Unlock()
				})
				keptByAll := func(v int) bool {
					return !slices.ContainsFunc(mustGo, func(m map[int]bool) bool { return m[v] })
				}
				for i, res := range results {
					if res.lerr != nil {
						t.Fatal(res.lerr)
					}
					failed := map[int]bool{}
					stalled := map[string]bool{} // aside names
					for _, e := range leaves(res.err) {
						var f *removalFault
						var se *StalledError
						if errors.As(e, &se) {
							if deadlines[i] != time.Minute {
								t.Fatalf("Prune(%v) = %v, before its deadline", keeps[i], res.err)
							}
							for _, en := range se.Entries {
								stalled[en.Aside] = true
							}
							continue
						}
						if !errors.As(e, &f) {
							t.Fatalf("Prune(%v) = %v: %v is no removal failure", keeps[i], res.err, e)
						}
						if keptByAll(f.v) {
							// (One it keeps that another set aside is
							// garbage to it too.)
							t.Fatalf("Prune(%v) = %v: every Prune keeps version %d", keeps[i], res.err, f.v)
						}
						failed[f.v] = true
					}
					for v, name := range res.left {
						if mustGo[i][v] && !failed[v] && !stalled[name] {
							t.Fatalf("Prune(%v) = %v, with version %d still in Root as %s at its return", keeps[i], res.err, v, name)
						}
					}
				}

				// Root holds the IDs every Prune kept, and the entries
				// whose last removal failed.
				after, err := versionsIn(l.Root)
				if err != nil {
					t.Fatal(err)
				}
				for v, name := range after {
					switch {
					case keptByAll(v) && before[v] != name:
						t.Fatalf("version %d, kept by every Prune, moved from %s to %s", v, before[v], name)
					case !keptByAll(v) && (!names.IsPlainAside(name) || !slices.Contains(fails, v)):
						t.Fatalf("version %d is in Root as %s; no removal of it failed", v, name)
					}
				}
				for v, name := range before {
					if _, ok := after[v]; keptByAll(v) && !ok {
						t.Fatalf("version %d, kept by every Prune as %s, is gone", v, name)
					}
				}
			},
		})
	})
}

// removalFrame matches a frame of the code that removes garbage, as a
// goroutine's stack shows it.
var removalFrame = regexp.MustCompile(`(?m)^leasekit\.dev/dirlife/internal/removal\.(removeLoop|removeHelper|job\.run|treeRemoval\.)`)

// removalGoroutines counts the goroutines of the process that are
// removing garbage: those with a frame of the removal code on their
// stack. Read once every goroutine is blocked, it is exact.
func removalGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	count := 0
	for g := range bytes.SplitSeq(buf, []byte("\n\n")) {
		if removalFrame.Match(g) {
			count++
		}
	}
	return count
}

// waitRemoversIdle waits until no removal goroutine of an earlier test
// runs, so that a test in a bubble shares the pool with no goroutine
// outside it.
func waitRemoversIdle(t *testing.T) {
	t.Helper()
	for {
		if running, queued, _ := removal.Load(); running == 0 && queued == 0 {
			return
		}
		time.Sleep(time.Millisecond) // an earlier test's removal finishing
	}
}

// TestRemovalGoroutinesBoundedPerProcess: 300 Writes and Prunes at once,
// on 30 roots, each with garbage to remove, all of whose removals hang:
// the goroutines removing, counted from the process's stacks once
// everything is blocked, never exceed removal.MaxRemovers; every other removal
// waits for a slot. The slots stay held by the stuck removals; every
// caller gets its *StalledError, naming its own entry first (a Prune
// also names those of others it found under way), at its deadline
// exactly. Once the removals return, every one is done, Root holds only
// IDs, and no removal goroutine is left.
func TestRemovalGoroutinesBoundedPerProcess(t *testing.T) {
	waitRemoversIdle(t)
	synctest.Test(t, func(t *testing.T) {
		const (
			roots    = 30
			perRoot  = 5 // Writes, and as many Prunes, on each root
			deadline = time.Hour
		)
		gate := make(chan struct{})
		open := sync.OnceFunc(func() { close(gate) })
		defer open() // also when the test fails: no removal stays blocked
		layouts := make([]Layout[int64], roots)
		for r := range layouts {
			l := genLayout(t)
			l.NoSync = true
			l.RemovalDeadline = deadline
			for id := range int64(perRoot) {
				mustWrite(t, l, id+1, versionFiles(id+1, 1))
				mustWrite(t, l, id+101, versionFiles(id+101, 1))
			}
			l.removing = func(string) { <-gate }
			layouts[r] = l
		}
		type result struct {
			call  string
			entry string // the garbage the call set aside
			err   error
			took  time.Duration
		}
		results := make(chan result, roots*2*perRoot)
		start := time.Now()
		for r, l := range layouts {
			all := []int64{1, 2, 3, 4, 5, 101, 102, 103, 104, 105}
			for i := range int64(perRoot) {
				go func() {
					_, err := l.Write(i+1, versionFiles(i+1, 2)) // a rewrite: the old copy goes
					results <- result{fmt.Sprintf("root %d: Write(%d)", r, i+1), fmt.Sprintf("gen-%d", i+1), err, time.Since(start)}
				}()
				go func() {
					doomed := i + 101
					err := l.Prune(slices.DeleteFunc(slices.Clone(all), func(id int64) bool { return id == doomed })...)
					results <- result{fmt.Sprintf("root %d: Prune(all but %d)", r, doomed), fmt.Sprintf("gen-%d", doomed), err, time.Since(start)}
				}()
			}
		}
		synctest.Wait() // every call waits for its removal; every removal is stuck or waits for a slot
		if n := removalGoroutines(); n > removal.MaxRemovers {
			t.Fatalf("%d goroutines removing for %d calls, over the process's bound of %d", n, roots*2*perRoot, removal.MaxRemovers)
		} else if n != removal.MaxRemovers {
			t.Fatalf("%d goroutines removing, want every one of the %d slots held", n, removal.MaxRemovers)
		}
		_, _, peak := removal.Load()
		if peak > removal.MaxRemovers {
			t.Fatalf("the pool ran %d goroutines at once, over %d", peak, removal.MaxRemovers)
		}

		// Every slot is held past the deadline: each call returns at its
		// deadline with a StalledError naming what it set aside.
		for range roots * 2 * perRoot {
			res := <-results
			var se *StalledError
			if !errors.As(res.err, &se) {
				t.Fatalf("%s = %v, want a *StalledError", res.call, res.err)
			}
			// A Write names its old copy; a Prune names what it set
			// aside first, then what it found under way.
			if len(se.Entries) == 0 || se.Entries[0].Name != res.entry || strings.Contains(res.call, "Write") && len(se.Entries) != 1 {
				t.Fatalf("%s: %v, want it to name %s first", res.call, res.err, res.entry)
			}
			if res.took != deadline {
				t.Fatalf("%s returned after %v, want the deadline %v", res.call, res.took, deadline)
			}
		}
		if n := removalGoroutines(); n > removal.MaxRemovers {
			t.Fatalf("%d goroutines removing past the deadline, over %d", n, removal.MaxRemovers)
		}

		open()
		for _, l := range layouts {
			settle(t, l)
			if left := leftovers(t, l.Root); len(left) != 0 {
				t.Fatalf("left in %s: %v", l.Root, left)
			}
		}
		synctest.Wait()
		if n := removalGoroutines(); n != 0 {
			t.Fatalf("%d goroutines still removing once every removal is over", n)
		}
	})
}

// TestRemovalSlotsHeldStallOthers: while every slot of the pool is held
// by a stuck removal, on any root, a Write on another root whose removal
// has no slot returns at its deadline with a *StalledError naming its old
// copy, and a SettleContext whose context ends first returns ctx's error
// at once; the removal starts, and completes, once a slot is free.
func TestRemovalSlotsHeldStallOthers(t *testing.T) {
	waitRemoversIdle(t)
	synctest.Test(t, func(t *testing.T) {
		const deadline = 30 * time.Second
		gate := make(chan struct{})
		open := sync.OnceFunc(func() { close(gate) })
		defer open()
		stuck := genLayout(t)
		stuck.NoSync = true
		stuck.DeferRemoval = true
		for id := range int64(removal.MaxRemovers) {
			mustWrite(t, stuck, id+1, versionFiles(id+1, 1))
		}
		stuck.removing = func(string) { <-gate }
		if err := stuck.Prune(); err != nil { // removal.MaxRemovers removals, each stuck
			t.Fatal(err)
		}
		synctest.Wait()

		var mu sync.Mutex
		var started []string
		other := genLayout(t)
		other.NoSync = true
		other.RemovalDeadline = deadline
		mustWrite(t, other, 1, versionFiles(1, 1))
		other.removing = func(was string) {
			mu.Lock()
			started = append(started, was)
			mu.Unlock()
		}
		start := time.Now()
		_, err := other.Write(1, versionFiles(1, 2))
		if took := time.Since(start); took != deadline {
			t.Fatalf("Write returned after %v, want the deadline %v", took, deadline)
		}
		var se *StalledError
		if !errors.As(err, &se) || len(se.Entries) != 1 || se.Entries[0].Name != "gen-1" {
			t.Fatalf("Write = %v, want a *StalledError naming gen-1", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start = time.Now()
		if err := other.Settle(ctx); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 5*time.Second {
			t.Fatalf("SettleContext = %v after %v, want ctx's error once ctx ends", err, time.Since(start))
		}
		mu.Lock()
		n := len(started)
		mu.Unlock()
		if n != 0 {
			t.Fatalf("%d removals started on the other root while every slot was held", n)
		}
		if n := removalGoroutines(); n != removal.MaxRemovers {
			t.Fatalf("%d goroutines removing, want the %d stuck ones", n, removal.MaxRemovers)
		}

		open()
		settle(t, stuck)
		settle(t, other)
		if left := leftovers(t, other.Root); len(left) != 0 {
			t.Fatalf("left in the other root: %v", left)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Equal(started, []string{"gen-1"}) {
			t.Fatalf("removals started on the other root: %v, want gen-1 once", started)
		}
	})
}

// fakeMounts is a device seam: directories named in mounts are on device
// 1<<60, everything else where deviceOf puts it.
func fakeMounts(mounts ...string) func(fs.FileInfo) uint64 {
	return func(fi fs.FileInfo) uint64 {
		if slices.Contains(mounts, fi.Name()) {
			return 1 << 60
		}
		return sys.DeviceOf(fi)
	}
}

// pruneErr runs Prune, waits for its background removals and returns the
// errors of both.
func pruneErr(l Layout[int64], keep ...int64) error {
	err := l.Prune(keep...)
	return errors.Join(err, l.Settle(context.Background()))
}

// checkMountError fails unless err is or joins a MountError naming path.
func checkMountError(t *testing.T, err error, path string) {
	t.Helper()
	if !hasMountError(err, path) {
		t.Fatalf("error = %v, want a MountError naming %s", err, path)
	}
}

func hasMountError(err error, path string) bool {
	if me, ok := err.(*removal.MountError); ok {
		return strings.HasSuffix(me.Path, path) && strings.Contains(me.Error(), path) && errors.Is(me, ErrMountPoint)
	}
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if hasMountError(e, path) {
				return true
			}
		}
	case interface{ Unwrap() error }:
		return hasMountError(u.Unwrap(), path)
	}
	return false
}

// TestMountBoundary: Prune and Reset never remove or descend into a
// directory on another device than Root (here by the device seam): they
// refuse with a MountError naming it, remove the rest, and what is on the
// other device survives.
func TestMountBoundary(t *testing.T) {
	l := genLayout(t)
	l.devices = fakeMounts("mnt", "gen-9")
	mustWrite(t, l, 1, Files{"a": []byte("a"), "mnt/precious": []byte("other filesystem")})
	mustWrite(t, l, 2, Files{"b": []byte("b")})
	mustWrite(t, l, 9, Files{"precious": []byte("a mount point named like an ID")})

	err := pruneErr(l, 2)
	checkMountError(t, err, "mnt")
	checkMountError(t, err, "gen-9")
	if ids, _ := l.IDs(); !slices.Equal(ids, []int64{2, 9}) {
		t.Fatalf("IDs after Prune(2) = %v, want [2 9]: gen-9 is a mount point", ids)
	}
	var aside string
	for _, n := range leftovers(t, l.Root) {
		if strings.HasPrefix(n, asidePrefix) {
			aside = n
		}
	}
	if aside == "" {
		t.Fatalf("no aside tree for gen-1 left, root = %v", rootEntries(t, l.Root))
	}
	if got := readTree(t, filepath.Join(l.Root, aside)); !sameFiles(got, Files{"mnt/precious": []byte("other filesystem")}) {
		t.Fatalf("the aside tree holds %v, want only the mount's file", got)
	}

	err = l.Reset()
	checkMountError(t, err, "mnt")
	checkMountError(t, err, "gen-9")
	if got := readTree(t, filepath.Join(l.Root, aside)); !sameFiles(got, Files{"mnt/precious": []byte("other filesystem")}) {
		t.Fatalf("Reset removed across the mount: %v", got)
	}
	if got := readTree(t, l.Dir(9)); string(got["precious"]) != "a mount point named like an ID" {
		t.Fatalf("Reset removed a mount point: %v", got)
	}

	// Without the mounts, the next Prune removes what is left.
	l.devices = nil
	if err := pruneErr(l); err != nil {
		t.Fatal(err)
	}
	if got := rootEntries(t, l.Root); len(got) != 0 {
		t.Fatalf("root = %v, want nothing", got)
	}
}

// TestRemovalFailureReported: a background removal that fails is reported
// once, by the next Prune or Settle, and what it left is removed by the
// next Prune.
func TestRemovalFailureReported(t *testing.T) {
	l := genLayout(t)
	l.devices = fakeMounts("sub")
	mustWrite(t, l, 1, Files{"sub/f": nil})
	// The removal runs in the background: its failure is reported by the
	// Prune itself if it is over by then, else by Settle; once.
	checkMountError(t, pruneErr(l), "sub")
	if err := l.Settle(context.Background()); err != nil {
		t.Fatalf("a second Settle = %v, want the failure reported once", err)
	}
	if len(leftovers(t, l.Root)) != 1 {
		t.Fatalf("root = %v, want the tree left", rootEntries(t, l.Root))
	}
	l.devices = nil
	if err := pruneErr(l); err != nil {
		t.Fatal(err)
	}
	if got := rootEntries(t, l.Root); len(got) != 0 {
		t.Fatalf("root = %v, want nothing", got)
	}
}

// writeFile is os.WriteFile that fails the test.
func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSettleAfterReportedFailure: what a removal that failed left stays in
// Root after Settle, which does not name it again when the call that
// waited for it returned the failure already; the next Prune removes it.
func TestSettleAfterReportedFailure(t *testing.T) {
	l := genLayout(t)
	l.devices = fakeMounts("sub")
	mustWrite(t, l, 1, Files{"sub/f": nil})
	checkMountError(t, l.Prune(), "sub")
	if err := l.Settle(context.Background()); err != nil {
		t.Fatalf("Settle after the Prune that returned the failure = %v, want nil", err)
	}
	if left := leftovers(t, l.Root); len(left) != 1 {
		t.Fatalf("Root after Settle = %v, want the tree the failure left", rootEntries(t, l.Root))
	}
	l.devices = nil
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	if got := rootEntries(t, l.Root); len(got) != 0 {
		t.Fatalf("Root = %v, want nothing", got)
	}
}
