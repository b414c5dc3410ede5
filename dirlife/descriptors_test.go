//go:build linux

package dirlife

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bigTree is a module of more than 1,000 directories in two shapes at once:
// a chain 500 deep with a file every 100 levels and one at the bottom,
// each level also holding a file (so the write climbs back up the chain),
// and a fan-out of 500 sibling directories of one file each.
func bigTree() Files {
	files := Files{}
	chain := ""
	for i := range 500 {
		chain += "c/"
		if i%100 == 0 || i == 499 {
			files[chain+"x"] = []byte(fmt.Sprint(i))
		}
	}
	files[chain+"bottom"] = []byte("bottom")
	for i := range 500 {
		files[fmt.Sprintf("w/d%04d/f", i)] = []byte(fmt.Sprint(i))
	}
	return files
}

func treeDirs(files Files) int {
	p, err := planFiles(files)
	if err != nil {
		panic(err)
	}
	return len(p.Dirs)
}

// openFDs counts this process's open descriptors.
func openFDs(t testing.TB) int {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(entries)
}

// TestWriteBoundsDescriptors measures the open descriptors at every step of
// a Write of a 1,000-directory tree, in each durable sync mode (NoSync only skips steps): the peak above the
// count before the Write stays within maxWriteFDs, a constant.
func TestWriteBoundsDescriptors(t *testing.T) {
	files := bigTree()
	if n := treeDirs(files); n < 1000 {
		t.Fatalf("the tree has %d directories, want at least 1,000", n)
	}
	for _, mode := range []struct {
		name            string
		noSync, perFile bool
	}{{"durable", false, false}, {"perfilesync", false, true}} {
		t.Run(mode.name, func(t *testing.T) {
			l := genLayout(t)
			l.NoSync, l.PerFileSync = mode.noSync, mode.perFile
			before := openFDs(t)
			var mu sync.Mutex // the seam runs on the file pool's workers too
			peak, steps := 0, 0
			l.faults = func(step, name string) error {
				mu.Lock()
				defer mu.Unlock()
				steps++
				if n := openFDs(t) - before; n > peak {
					peak = n
				}
				return nil
			}
			if _, err := l.Write(1, files); err != nil {
				t.Fatal(err)
			}
			l.faults = nil
			if steps < 1000 {
				t.Fatalf("the seam saw %d steps, want one per directory at least", steps)
			}
			if peak > maxWriteFDs {
				t.Fatalf("a Write of %d directories held %d descriptors at its peak, over the bound of %d", treeDirs(files), peak, maxWriteFDs)
			}
			t.Logf("peak: %d descriptors above the count before the Write (bound %d)", peak, maxWriteFDs)
			if got := readTree(t, l.Dir(1)); !sameFiles(got, files) {
				t.Fatal("the written tree differs from the files")
			}
			if after := openFDs(t); after > before {
				t.Fatalf("%d descriptors open after the Write, %d before", after, before)
			}
		})
	}
}

const envLowFDChild = "DIRLIFE_TEST_LOWFD_CHILD" // root; writes bigTree under a low RLIMIT_NOFILE

// lowFDLimit is the descriptor limit of the child: far below the tree's
// 1,000 directories, above what the test binary and one Write need.
const lowFDLimit = 128

func TestLowFDLimitChild(t *testing.T) {
	root := os.Getenv(envLowFDChild)
	if root == "" {
		t.Skip("run by TestWriteUnderLowFDLimit")
	}
	lim := syscall.Rlimit{Cur: lowFDLimit, Max: lowFDLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	for _, perFile := range []bool{false, true} {
		l := Layout[int64]{Root: root, Codec: IntCodec[int64]{Prefix: "gen-"}, PerFileSync: perFile}
		id := int64(1)
		if perFile {
			id = 2
		}
		if _, err := l.Write(id, bigTree()); err != nil {
			t.Fatalf("Write (PerFileSync %v) under RLIMIT_NOFILE %d: %v", perFile, lowFDLimit, err)
		}
	}
	// Removal too: a rewrite's old copy, removed in the background, and
	// an ID pruned, each as deep as the tree. The removal deadline is out
	// of reach: removing a tree this deep takes minutes on a loaded
	// machine, and the test asks that it succeeds, not how soon.
	l := Layout[int64]{Root: root, Codec: IntCodec[int64]{Prefix: "gen-"}, RemovalDeadline: 24 * time.Hour}
	if _, err := l.Write(3, bigTree()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Write(3, bigTree()); err != nil {
		t.Fatal(err)
	}
	if err := l.Prune(1, 2); err != nil {
		t.Fatalf("Prune under RLIMIT_NOFILE %d: %v", lowFDLimit, err)
	}
	if err := l.Settle(context.Background()); err != nil {
		t.Fatalf("removal under RLIMIT_NOFILE %d: %v", lowFDLimit, err)
	}
	if ids, err := l.IDs(); err != nil || len(ids) != 2 {
		t.Fatalf("IDs after Prune(1, 2) = %v, %v", ids, err)
	}
	if left := leftovers(t, root); len(left) != 0 {
		t.Fatalf("leftovers after Settle: %v", left)
	}
}

// TestWriteUnderLowFDLimit writes a 1,000-directory tree, 500 deep, in a
// child process whose descriptor limit is 128, in both durable sync
// modes, then rewrites and prunes one: its removal is bounded too.
func TestWriteUnderLowFDLimit(t *testing.T) {
	if os.Getenv(envLowFDChild) != "" {
		t.Skip("in the child")
	}
	l := genLayout(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLowFDLimitChild$", "-test.v")
	cmd.Env = append(os.Environ(), envLowFDChild+"="+l.Root)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestLowFDLimitChild") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	for _, id := range []int64{1, 2} {
		if got := readTree(t, l.Dir(id)); !sameFiles(got, bigTree()) {
			t.Fatalf("the tree of ID %d differs from the files", id)
		}
	}
}
