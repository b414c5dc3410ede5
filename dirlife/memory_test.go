//go:build linux

package dirlife

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

	memFiles     = 10_000
	memDirs      = 100
	memTotal     = 1 << 30
	memMaxGrowth = 64 << 20
)

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
				kind, memFiles, secs, float64(growth)/(1<<20), float64(start)/(1<<20), float64(hwm)/(1<<20))
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
		w, err = l.CopyFS(context.Background(), 1, genFS{}, StreamOptions{})
	case "stream":
		w, err = l.WriteStream(context.Background(), 1, fillGen, StreamOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	secs := time.Since(began).Seconds()
	hwm := procStatus(t, "VmHWM")
	// Check what was written, by size (its bytes are the digest's).
	var files, total int64
	err = filepath.WalkDir(w.Dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		files++
		total += info.Size()
		return err
	})
	if err != nil || files != memFiles || total != memTotal {
		t.Fatalf("wrote %d files of %d bytes in all (%v), want %d of %d", files, total, err, memFiles, memTotal)
	}
	fmt.Printf("memory: growth %d start %d hwm %d seconds %g\n", hwm-start, start, hwm, secs)
}

// procStatus returns a field of /proc/self/status, in bytes.
func procStatus(t *testing.T, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// genSize is the size of file i of the generated tree: 1 GiB in all.
func genSize(i int) int64 {
	size := int64(memTotal / memFiles)
	if i < memTotal%memFiles {
		size++
	}
	return size
}

func genName(i int) string { return fmt.Sprintf("d%02d/f%03d", i%memDirs, i/memDirs) }

// genReader yields file i's bytes, computed, never held.
type genReader struct {
	i         int
	off, size int64
}

func (r *genReader) Read(b []byte) (int, error) {
	if r.off >= r.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(b)), r.size-r.off))
	for j := range n {
		b[j] = byte((r.off+int64(j))*31 + int64(r.i))
	}
	r.off += int64(n)
	return n, nil
}

// fillGen writes the generated tree through dir.
func fillGen(ctx context.Context, dir *os.Root) error {
	buf := make([]byte, 128<<10)
	for d := range memDirs {
		if err := dir.Mkdir(fmt.Sprintf("d%02d", d), 0o755); err != nil {
			return err
		}
	}
	for i := range memFiles {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := dir.Create(genName(i))
		if err != nil {
			return err
		}
		_, err = io.CopyBuffer(f, &genReader{i: i, size: genSize(i)}, buf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// genFS is the generated tree as an fs.FS: 100 directories of 100 files.
type genFS struct{}

type genInfo struct {
	name string
	size int64
	dir  bool
}

func (i genInfo) Name() string { return path.Base(i.name) }
func (i genInfo) Size() int64  { return i.size }
func (i genInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i genInfo) ModTime() time.Time { return time.Time{} }
func (i genInfo) IsDir() bool        { return i.dir }
func (i genInfo) Sys() any           { return nil }

type genFile struct {
	info genInfo
	*genReader
}

func (f genFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f genFile) Close() error               { return nil }
func (f genFile) Read(b []byte) (int, error) {
	if f.genReader == nil {
		return 0, &fs.PathError{Op: "read", Path: f.info.name, Err: fs.ErrInvalid}
	}
	return f.genReader.Read(b)
}

func (genFS) lookup(name string) (genInfo, int, bool) {
	if name == "." {
		return genInfo{name: ".", dir: true}, -1, true
	}
	var d, n int
	if c, err := fmt.Sscanf(name, "d%02d/f%03d", &d, &n); c == 2 && err == nil && genName(d+n*memDirs) == name {
		i := d + n*memDirs
		return genInfo{name: name, size: genSize(i)}, i, true
	}
	if c, _ := fmt.Sscanf(name, "d%02d", &d); c == 1 && fmt.Sprintf("d%02d", d) == name && d < memDirs {
		return genInfo{name: name, dir: true}, -1, true
	}
	return genInfo{}, 0, false
}

func (g genFS) Open(name string) (fs.File, error) {
	info, i, ok := g.lookup(name)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	f := genFile{info: info}
	if !info.dir {
		f.genReader = &genReader{i: i, size: info.size}
	}
	return f, nil
}

func (g genFS) ReadDir(name string) ([]fs.DirEntry, error) {
	info, _, ok := g.lookup(name)
	if !ok || !info.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	var out []fs.DirEntry
	if name == "." {
		for d := range memDirs {
			out = append(out, fs.FileInfoToDirEntry(genInfo{name: fmt.Sprintf("d%02d", d), dir: true}))
		}
		return out, nil
	}
	var d int
	fmt.Sscanf(name, "d%02d", &d)
	for n := range memFiles / memDirs {
		i := d + n*memDirs
		out = append(out, fs.FileInfoToDirEntry(genInfo{name: genName(i), size: genSize(i)}))
	}
	return out, nil
}
