//go:build linux

package dirlife

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"leasekit.dev/internal/testkit/gentree"
	"leasekit.dev/internal/testkit/memstat"
)

// The memory measurement: a child process writes 1 GiB in 10,000 files,
// durable, to a Root on disk, and reports its peak RSS growth. It is not
// part of CI; run it with
//
//	DIRLIFE_MEMORY_ROOT=/var/tmp/dirlife-mem go test -run '^TestStreamMemory$' -v ./dirlife
//
// where the directory (created if missing, removed after) is on a disk,
// not a tmpfs.
const (
	envMemoryRoot  = "DIRLIFE_MEMORY_ROOT"
	envMemoryChild = "DIRLIFE_TEST_MEMORY_CHILD" // "copy" or "stream"

	memMaxGrowth = 64 << 20
)

// memTree is the tree the child writes.
var memTree = gentree.Tree{Files: 10_000, Total: 1 << 30}

// TestStreamMemory runs a CopyFS and a WriteStream of 1 GiB in 10,000
// files, each in a child process, and fails if either's peak RSS (VmHWM)
// grows by 64 MiB or more over its RSS before the write.
func TestStreamMemory(t *testing.T) {
	root := os.Getenv(envMemoryRoot)
	if root == "" || os.Getenv(envMemoryChild) != "" {
		t.Skip("set " + envMemoryRoot + " to a directory on disk to measure a 1 GiB streamed write")
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(root, &st); err != nil {
		t.Fatal(err)
	}
	if st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC {
		t.Fatalf("%s is on a tmpfs or ramfs: the measurement needs a disk", root)
	}
	for _, kind := range []string{"copy", "stream"} {
		t.Run(kind, func(t *testing.T) {
			dir, err := os.MkdirTemp(root, kind+"-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			cmd := exec.Command(os.Args[0], "-test.run=^TestStreamMemoryChild$", "-test.v")
			cmd.Env = append(os.Environ(), envMemoryChild+"="+kind, envMemoryRoot+"="+filepath.Join(dir, "root"))
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "--- PASS: TestStreamMemoryChild") {
				t.Fatalf("child: %v\n%s", err, out)
			}
			var growth, hwm, start int64
			var secs float64
			for line := range strings.Lines(string(out)) {
				if i := strings.Index(line, "memory: "); i >= 0 {
					fmt.Sscanf(line[i:], "memory: growth %d start %d hwm %d seconds %g", &growth, &start, &hwm, &secs)
				}
			}
			if hwm == 0 {
				t.Fatalf("no measurement in the child's output:\n%s", out)
			}
			t.Logf("%s: 1 GiB in %d files, durable, in %.1fs: peak RSS growth %.1f MiB (VmRSS at start %.1f MiB, VmHWM %.1f MiB)",
				kind, memTree.Files, secs, float64(growth)/(1<<20), float64(start)/(1<<20), float64(hwm)/(1<<20))
			if growth >= memMaxGrowth {
				t.Fatalf("peak RSS grew by %d bytes, over %d", growth, memMaxGrowth)
			}
		})
	}
}

func TestStreamMemoryChild(t *testing.T) {
	kind := os.Getenv(envMemoryChild)
	if kind == "" {
		t.Skip("run by TestStreamMemory")
	}
	start := procStatus(t, "VmRSS")
	began := time.Now()
	l := Layout[int64]{Root: os.Getenv(envMemoryRoot), Codec: IntCodec[int64]{Prefix: "gen-"}}
	var w Written
	var err error
	switch kind {
	case "copy":
		w, err = l.CopyFS(context.Background(), 1, memTree, StreamOptions{})
	case "stream":
		w, err = l.WriteStream(context.Background(), 1, memTree.WriteTo, StreamOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	secs := time.Since(began).Seconds()
	hwm := procStatus(t, "VmHWM")
	// Check what was written, by size (its bytes are the digest's).
	files, total, err := gentree.Measure(w.Dir)
	if err != nil || files != int64(memTree.Files) || total != memTree.Total {
		t.Fatalf("wrote %d files of %d bytes in all (%v), want %d of %d", files, total, err, memTree.Files, memTree.Total)
	}
	fmt.Printf("memory: growth %d start %d hwm %d seconds %g\n", hwm-start, start, hwm, secs)
}

// procStatus returns a field of /proc/self/status, in bytes.
func procStatus(t *testing.T, field string) int64 {
	v, err := memstat.Status(field)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
