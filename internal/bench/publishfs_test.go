package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
)

// A generated tree: files of computed bytes, 100 to a directory, never
// held in memory, as an fs.FS.
type genTree struct {
	files int
	total int64
}

const genPerDir = 100

func (g genTree) dirs() int { return (g.files + genPerDir - 1) / genPerDir }

func (g genTree) size(i int) int64 {
	size := g.total / int64(g.files)
	if int64(i) < g.total%int64(g.files) {
		size++
	}
	return size
}

func (g genTree) name(i int) string { return fmt.Sprintf("d%03d/f%03d", i/genPerDir, i%genPerDir) }

// files returns the tree held in memory, for the ways in that need it.
func (g genTree) inMemory() dirlife.Files {
	files := dirlife.Files{}
	for i := range g.files {
		data, _ := io.ReadAll(&genReader{i: i, size: g.size(i)})
		files[g.name(i)] = data
	}
	return files
}

// genReader yields file i's bytes, computed.
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
	r    *genReader
}

func (f genFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f genFile) Close() error               { return nil }
func (f genFile) Read(b []byte) (int, error) {
	if f.r == nil {
		return 0, &fs.PathError{Op: "read", Path: f.info.name, Err: fs.ErrInvalid}
	}
	return f.r.Read(b)
}

// lookup returns the entry name, and the file's index (-1 for a directory).
func (g genTree) lookup(name string) (genInfo, int, bool) {
	if name == "." {
		return genInfo{name: ".", dir: true}, -1, true
	}
	dir, base, ok := strings.Cut(name, "/")
	d, err := strconv.Atoi(strings.TrimPrefix(dir, "d"))
	if err != nil || fmt.Sprintf("d%03d", d) != dir || d < 0 || d >= g.dirs() {
		return genInfo{}, 0, false
	}
	if !ok {
		return genInfo{name: name, dir: true}, -1, true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(base, "f"))
	i := d*genPerDir + n
	if err != nil || n < 0 || n >= genPerDir || i >= g.files || g.name(i) != name {
		return genInfo{}, 0, false
	}
	return genInfo{name: name, size: g.size(i)}, i, true
}

func (g genTree) Open(name string) (fs.File, error) {
	info, i, ok := g.lookup(name)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	f := genFile{info: info}
	if !info.dir {
		f.r = &genReader{i: i, size: info.size}
	}
	return f, nil
}

func (g genTree) ReadDir(name string) ([]fs.DirEntry, error) {
	info, _, ok := g.lookup(name)
	if !ok || !info.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	var out []fs.DirEntry
	if name == "." {
		for d := range g.dirs() {
			out = append(out, fs.FileInfoToDirEntry(genInfo{name: fmt.Sprintf("d%03d", d), dir: true}))
		}
		return out, nil
	}
	d, _ := strconv.Atoi(strings.TrimPrefix(name, "d"))
	for i := d * genPerDir; i < min((d+1)*genPerDir, g.files); i++ {
		out = append(out, fs.FileInfoToDirEntry(genInfo{name: g.name(i), size: g.size(i)}))
	}
	return out, nil
}

func nopBuild(context.Context, string) (struct{}, error) { return struct{}{}, nil }

func newFilePublisher(b *testing.B, noSync bool) *publish.Publisher[int64, struct{}, int] {
	p := publish.New(filepath.Join(b.TempDir(), "root"), dirlife.IntCodec[int64]{Prefix: "gen-"}, nopBuild,
		publish.Options[int64, struct{}, int]{NoSync: noSync})
	if err := p.Boot(); err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkPublishFS publishes a tree of 64 MiB in 1,000 files as a new
// key each time: PublishFS of the tree read from an fs.FS as it is
// copied (generated, kind=publishfs, or held in memory as an
// fstest.MapFS, kind=publishfs-mapfs: what Publish would cost as a form
// of PublishFS), Publish of the tree held in memory, and the baseline's
// write of it (held in memory, not durable); and identical re-publishes,
// which PublishFS tells by the digest of a staged copy it then discards,
// and Publish by a fingerprint of the files. The replaced
// directory goes with each publish, inside the timer, as a publisher
// removes it.
func BenchmarkPublishFS(b *testing.B) {
	tree := genTree{files: 1000, total: 64 << 20}
	files := tree.inMemory()
	memFS := fstest.MapFS{}
	for name, data := range files {
		memFS[name] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	ctx := context.Background()
	for _, noSync := range []bool{false, true} {
		mode := "durable"
		if noSync {
			mode = "nosync"
		}
		b.Run("impl=leasekit/"+mode+"/kind=publishfs", func(b *testing.B) {
			p := newFilePublisher(b, noSync)
			settle()
			b.ReportAllocs()
			b.SetBytes(tree.total)
			var key int64
			for b.Loop() {
				key++
				if _, err := p.PublishFS(ctx, key, tree, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("impl=leasekit/"+mode+"/kind=publishfs-mapfs", func(b *testing.B) {
			p := newFilePublisher(b, noSync)
			settle()
			b.ReportAllocs()
			b.SetBytes(tree.total)
			var key int64
			for b.Loop() {
				key++
				if _, err := p.PublishFS(ctx, key, memFS, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("impl=leasekit/"+mode+"/kind=publish-unchanged", func(b *testing.B) {
			p := newFilePublisher(b, noSync)
			if _, err := p.Publish(ctx, 1, files, 0); err != nil {
				b.Fatal(err)
			}
			settle()
			b.ReportAllocs()
			b.SetBytes(tree.total)
			for b.Loop() {
				if _, err := p.Publish(ctx, 1, files, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("impl=leasekit/"+mode+"/kind=publish", func(b *testing.B) {
			p := newFilePublisher(b, noSync)
			settle()
			b.ReportAllocs()
			b.SetBytes(tree.total)
			var key int64
			for b.Loop() {
				key++
				if _, err := p.Publish(ctx, key, files, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("impl=leasekit/"+mode+"/kind=publishfs-unchanged", func(b *testing.B) {
			p := newFilePublisher(b, noSync)
			if _, err := p.PublishFS(ctx, 1, tree, 0); err != nil {
				b.Fatal(err)
			}
			settle()
			b.ReportAllocs()
			b.SetBytes(tree.total)
			for b.Loop() {
				if _, err := p.PublishFS(ctx, 1, tree, 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("impl=baseline/kind=write", func(b *testing.B) {
		l := newBaseline(b)
		settle()
		b.ReportAllocs()
		b.SetBytes(tree.total)
		var id int64
		for b.Loop() {
			id++
			if _, err := l.Write(id, files); err != nil {
				b.Fatal(err)
			}
			if err := l.Prune(id); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPublishFSMemory publishes a generated tree of 1 GiB in 10,000
// files, durable, through PublishFS, once per iteration, and reports the
// process's peak RSS growth over its RSS before the publish
// (peak-RSS-growth-MiB; the peak is reset first, through
// /proc/self/clear_refs). It needs Linux and a Root on disk, and is
// skipped unless LEASEKIT_BENCH_LARGE is set, the size in MiB (1024 for
// the bound of 64 MiB):
//
//	LEASEKIT_BENCH_LARGE=1024 go test -run '^$' -bench '^BenchmarkPublishFSMemory$' -benchtime 1x leasekit.dev/internal/bench
func BenchmarkPublishFSMemory(b *testing.B) {
	mib, err := strconv.Atoi(os.Getenv("LEASEKIT_BENCH_LARGE"))
	if err != nil || mib <= 0 {
		b.Skip("set LEASEKIT_BENCH_LARGE to a size in MiB to publish a tree that large")
	}
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Skipf("cannot reset the peak RSS: %v", err)
	}
	tree := genTree{files: 10_000, total: int64(mib) << 20}
	p := newFilePublisher(b, false)
	ctx := context.Background()
	var growth int64
	var key int64
	b.ReportAllocs()
	b.SetBytes(tree.total)
	for b.Loop() {
		key++
		b.StopTimer()
		settle()
		if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
			b.Fatal(err)
		}
		start := procStatus(b, "VmRSS")
		b.StartTimer()
		rec, err := p.PublishFS(ctx, key, tree, 0)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		growth = max(growth, procStatus(b, "VmHWM")-start)
		if n, size := treeSize(b, rec.Dir); n != int64(tree.files) || size != tree.total {
			b.Fatalf("published %d files of %d bytes, want %d of %d", n, size, tree.files, tree.total)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(growth)/(1<<20), "peak-RSS-growth-MiB")
}

// treeSize returns the number and total size of the regular files under dir.
func treeSize(b *testing.B, dir string) (n, size int64) {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		n++
		size += info.Size()
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n, size
}

// procStatus returns a field of /proc/self/status, in bytes.
func procStatus(b *testing.B, field string) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
