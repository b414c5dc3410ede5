//go:build unix

package dirlife

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"leasekit.dev/internal/testkit/crash"
)

// Child processes: the test binary re-executed with one of these set.
const (
	envCrashChild  = "DIRLIFE_TEST_CRASH_CHILD"  // root; writes and rewrites until killed
	envStressChild = "DIRLIFE_TEST_STRESS_CHILD" // root; writes, prunes and checks, then exits
	envSeed        = "DIRLIFE_TEST_SEED"
	envNoSync      = "DIRLIFE_TEST_NOSYNC"
)

func childLayout(root string) Layout[int64] {
	return Layout[int64]{Root: root, Codec: IntCodec[int64]{Prefix: "gen-"}, NoSync: os.Getenv(envNoSync) != ""}
}

// checkComplete fails unless dir holds exactly one complete version of id.
func checkComplete(t tb, dir string, id int64) {
	t.Helper()
	got := readTree(t, dir)
	m := strings.Fields(string(got["MANIFEST"]))
	if len(m) != 3 {
		t.Fatalf("%s: no valid manifest (files %v)", dir, keys(got))
	}
	v, _ := strconv.Atoi(m[1])
	if m[0] != strconv.FormatInt(id, 10) || !sameFiles(got, versionFiles(id, v)) {
		t.Fatalf("%s: partial or mixed directory: files %v, manifest %q", dir, keys(got), got["MANIFEST"])
	}
}

func keys(f Files) []string {
	var k []string
	for n := range f {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

// TestCrashChild is the child of TestCrash: it writes and rewrites IDs,
// by Tree, stream and copy, until it is killed.
func TestCrashChild(t *testing.T) {
	crash.Child(t)
	seed, _ := strconv.ParseUint(os.Getenv(envSeed), 10, 64)
	rng := rand.New(rand.NewPCG(seed, 1))
	l := childLayout(os.Getenv(envCrashChild))
	for v := 0; ; v++ {
		id := rng.Int64N(4)
		// WriteTree, WriteStream and CopyFS in turn.
		if _, err := streamKinds[v%3].write(l, id, treeOf(versionFiles(id, v)), StreamOptions{}); err != nil {
			t.Fatal(err)
		}
		crash.Ready()
		if v%7 == 6 {
			if err := l.Prune(rng.Int64N(4), rng.Int64N(4)); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestCrash kills a writing child process with SIGKILL at random instants,
// 50 times: after each kill every listed directory is complete, and Prune
// leaves only the kept directories (once its removals settle).
func TestCrash(t *testing.T) {
	kills := 50
	if testing.Short() {
		kills = 20
	}
	l := genLayout(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	var withIDs, midWrite int // kills after the first Write; kills that left staging behind
	defer func() {
		t.Logf("%d kills: %d after the first Write, %d in the middle of one", kills, withIDs, midWrite)
		if withIDs == 0 {
			t.Error("the child never got to write before it was killed")
		}
	}()
	for i := range kills {
		env := []string{envCrashChild + "=" + l.Root, envSeed + "=" + strconv.Itoa(i)}
		if i%2 == 1 {
			env = append(env, envNoSync+"=1")
		}
		// Once the first Write is done, kill at a random instant of the
		// ones that follow.
		crash.Start(t, "TestCrashChild", env...).Kill(time.Duration(rng.IntN(20_000)) * time.Microsecond)

		ids, err := l.IDs()
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			checkComplete(t, l.Dir(id), id)
		}
		if len(ids) > 0 {
			withIDs++
			if len(leftovers(t, l.Root)) > 0 {
				midWrite++
			}
		}
		keep := ids
		if len(keep) > 1 {
			keep = keep[:len(keep)/2]
		}
		if err := l.Prune(keep...); err != nil {
			t.Fatalf("kill %d: Prune: %v", i, err)
		}
		settle(t, l)
		var want []string
		for _, id := range keep {
			want = append(want, l.Codec.Format(id))
		}
		slices.Sort(want)
		if _, err := os.Stat(l.Root); os.IsNotExist(err) {
			continue // killed before its first Write
		}
		if got := rootEntries(t, l.Root); !slices.Equal(got, want) && (len(got) != 0 || len(want) != 0) {
			t.Fatalf("kill %d: root after Prune(%v) = %v, want %v", i, keep, got, want)
		}
	}
}

// TestStressChild is the child of TestTwoProcesses: it writes, prunes,
// resets and lists on a root another process uses at once.
func TestStressChild(t *testing.T) {
	root := os.Getenv(envStressChild)
	if root == "" {
		t.Skip("run by TestTwoProcesses")
	}
	seed, _ := strconv.ParseUint(os.Getenv(envSeed), 10, 64)
	stress(t, childLayout(root), seed, 150)
}

// stress writes, prunes, resets and lists l at random for ops steps. Each
// ID always gets the same files (IDs are immutable), so any directory it
// reads must be complete; one that vanishes mid-read was pruned by another
// process or goroutine.
// It returns how many directories it read and checked whole.
func stress(t tb, l Layout[int64], seed uint64, ops int) (checked int) {
	rng := rand.New(rand.NewPCG(seed, 3))
	for range ops {
		switch id := rng.Int64N(8); rng.IntN(9) {
		case 0, 1, 2:
			if _, err := l.Write(id, versionFiles(id, int(id))); err != nil {
				t.Fatal(err)
			}
		case 3:
			if _, err := streamKinds[1+rng.IntN(2)].write(l, id, treeOf(versionFiles(id, int(id))), StreamOptions{}); err != nil {
				t.Fatal(err)
			}
		case 4, 5:
			if err := l.Prune(id, rng.Int64N(8)); err != nil {
				t.Fatal(err)
			}
		case 6:
			if err := l.Reset(); err != nil {
				t.Fatal(err)
			}
		default:
			ids, err := l.IDs()
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				files, err := readPublished(l.Dir(id))
				switch {
				case errors.Is(err, errMovedAway):
					// Pruned, reset or rewritten while being read.
				case err != nil:
					t.Fatalf("gen-%d: %v", id, err)
				case !sameFiles(files, versionFiles(id, int(id))):
					t.Fatalf("gen-%d is partial: %v", id, keys(files))
				default:
					checked++
				}
			}
		}
	}
	return checked
}

// errMovedAway reports a directory that left its path while it was read.
var errMovedAway = errors.New("moved away while read")

// readPublished reads the directory at dir and checks that the same
// directory stood at dir before and after the read. A layout moves a
// directory out of its path before removing it (a rewrite swaps it out, a
// Prune renames it aside) and never moves one back, so a read that began
// and ended on the same directory read it while it was published: any
// file missing then is a partial publication. A read that raced the
// removal returns errMovedAway: a reader that holds a directory it does
// not protect (by keeping it out of Prune, by not rewriting its ID) can see
// it emptied, which is what leases are for.
//
// The directory is read through a descriptor held open from before to
// after, not by its path: the descriptor keeps its inode from being freed,
// so no directory created during the read (a later Write's staging
// directory, on a filesystem that reuses inode numbers at once) can take
// its number and pass for it at the end, and every file read is the held
// directory's, not that of whichever directory stands at the path.
func readPublished(dir string) (Files, error) {
	r, err := os.OpenRoot(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errMovedAway
	}
	if err != nil {
		return nil, err
	}
	defer r.Close()
	held, err := r.Stat(".")
	if err != nil {
		return nil, err
	}
	files, readErr := readFSErr(r.FS())
	after, err := os.Lstat(dir)
	if err != nil || !os.SameFile(held, after) {
		return nil, errMovedAway
	}
	return files, readErr
}

// readFSErr returns the regular files of fsys.
func readFSErr(fsys fs.FS) (Files, error) {
	files := Files{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		files[p] = data
		return err
	})
	return files, err
}

// TestTwoProcesses runs two processes writing, pruning and listing one
// root at once: neither fails, none deadlocks, and no partial directory is
// ever read.
func TestTwoProcesses(t *testing.T) {
	l := genLayout(t)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	outs := make([]bytes.Buffer, 2)
	for i := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStressChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), envStressChild+"="+l.Root, envSeed+"="+strconv.Itoa(i))
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		wg.Go(func() { errs[i] = cmd.Run() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("process %d: %v\n%s", i, err, outs[i].String())
		}
	}
	ids, err := l.IDs()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		checkComplete(t, l.Dir(id), id)
	}
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	settle(t, l)
	if left := leftovers(t, l.Root); len(left) != 0 {
		t.Fatalf("leftovers after both processes and a Prune: %v", left)
	}
}

// goroutineTB fails the test from a goroutine other than the test's own:
// it records the failure and ends that goroutine.
type goroutineTB struct{ t *testing.T }

func (g goroutineTB) Helper()                   { g.t.Helper() }
func (g goroutineTB) Fatal(args ...any)         { g.t.Error(args...); runtime.Goexit() }
func (g goroutineTB) Fatalf(f string, a ...any) { g.t.Errorf(f, a...); runtime.Goexit() }

// TestGoroutines runs Write, Prune, Reset and IDs from four goroutines on
// one root at once.
func TestGoroutines(t *testing.T) {
	l := genLayout(t)
	l.NoSync = true
	var wg sync.WaitGroup
	var checked atomic.Int64
	for i := range 4 {
		wg.Go(func() { checked.Add(int64(stress(goroutineTB{t}, l, uint64(i), 200))) })
	}
	wg.Wait()
	if checked.Load() == 0 {
		t.Fatal("no directory was read whole while the others wrote and pruned")
	}
	t.Logf("%d directories read and checked whole", checked.Load())
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	settle(t, l)
	if got := rootEntries(t, l.Root); len(got) != 0 {
		t.Fatalf("root after the goroutines and a Prune: %v", got)
	}
}

// TestConcurrentCreate: writers racing to create one new ID each publish a
// complete directory, none clobbers another mid-way, and no staging or
// moved-aside copy is left behind.
func TestConcurrentCreate(t *testing.T) {
	for round := range 20 {
		l := genLayout(t)
		l.NoSync = true
		var wg sync.WaitGroup
		for v := range 6 {
			wg.Go(func() { mustWrite(goroutineTB{t}, l, 3, versionFiles(3, v)) })
		}
		wg.Wait()
		if ids, _ := l.IDs(); !slices.Equal(ids, []int64{3}) {
			t.Fatalf("round %d: IDs() = %v", round, ids)
		}
		checkComplete(t, l.Dir(3), 3)
		settle(t, l)
		if left := leftovers(t, l.Root); len(left) != 0 {
			t.Fatalf("round %d: leftovers %v", round, left)
		}
	}
}

// TestReplaceNeverMissing: a reader that stats an ID while it is rewritten
// 300 times never finds it missing.
func TestReplaceNeverMissing(t *testing.T) {
	l := genLayout(t)
	l.NoSync = true // the property is atomicity; syncing only slows the loop
	mustWrite(t, l, 1, versionFiles(1, 0))
	done := make(chan struct{})
	var misses, stats int
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			fi, err := os.Lstat(l.Dir(1))
			stats++
			if err != nil || !fi.IsDir() {
				misses++
			}
		}
	})
	for v := 1; v <= 300; v++ {
		mustWrite(t, l, 1, versionFiles(1, v))
	}
	close(done)
	wg.Wait()
	if misses > 0 {
		t.Fatalf("gen-1 was missing or not a directory in %d of %d stats", misses, stats)
	}
	checkComplete(t, l.Dir(1), 1)
	settle(t, l)
	if left := leftovers(t, l.Root); len(left) != 0 {
		t.Fatalf("leftovers after 300 rewrites: %v", left)
	}
}
