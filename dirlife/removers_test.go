package dirlife

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"leasekit.dev/dirlife/internal/removal"
)

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
