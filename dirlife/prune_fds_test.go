//go:build linux

package dirlife

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"leasekit.dev/dirlife/internal/removal"
)

const envPruneFDChild = "DIRLIFE_TEST_PRUNE_FD_CHILD" // root; prunes wideDeepTree copies under a low RLIMIT_NOFILE

// pruneFDLimit is the child's descriptor limit: above what one removal of
// wideDeepTree holds on its removal.RemoveWorkers goroutines, well below what
// removal.RemoveWorkers removals of it at once hold.
const pruneFDLimit = 160

// wideDeepTree has removal.RemoveWorkers chains 300 deep at its top, so that the
// removal of its top entries runs on removal.RemoveWorkers goroutines, each
// descending as deep as the chains.
func wideDeepTree() Files {
	files := Files{}
	for c := range removal.RemoveWorkers {
		p := fmt.Sprintf("c%d/", c)
		for range 300 {
			p += "d/"
		}
		files[p+"f"] = nil
	}
	return files
}

func TestPruneFDLimitChild(t *testing.T) {
	root := os.Getenv(envPruneFDChild)
	if root == "" {
		t.Skip("run by TestPruneOfManyTreesBoundsDescriptors")
	}
	lim := syscall.Rlimit{Cur: pruneFDLimit, Max: pruneFDLimit}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	l := Layout[int64]{Root: root, Codec: IntCodec[int64]{Prefix: "gen-"}, NoSync: true}
	if err := l.Prune(); err != nil {
		t.Fatalf("Prune of %d deep trees under RLIMIT_NOFILE %d: %v", removal.MaxRemovers, pruneFDLimit, err)
	}
	if got := rootEntries(t, root); len(got) != 0 {
		t.Fatalf("Root after Prune = %v, want nothing", got)
	}
}

// TestPruneOfManyTreesBoundsDescriptors: a Prune of several deep, wide
// trees holds no more descriptors than the removal of one: its removals
// run on at most removal.RemoveWorkers goroutines in all, not on removal.RemoveWorkers
// for each tree.
func TestPruneOfManyTreesBoundsDescriptors(t *testing.T) {
	if os.Getenv(envPruneFDChild) != "" {
		t.Skip("in the child")
	}
	l := genLayout(t)
	l.NoSync = true
	for id := range int64(removal.MaxRemovers) {
		mustWrite(t, l, id+1, wideDeepTree())
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPruneFDLimitChild$", "-test.v")
	cmd.Env = append(os.Environ(), envPruneFDChild+"="+l.Root)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestPruneFDLimitChild") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
