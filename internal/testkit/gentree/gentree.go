package gentree

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// PerDir is how many files a directory of a Tree holds, the last one
// fewer.
const PerDir = 100

// A Tree is Files files of Total bytes in all, as evenly as whole bytes
// allow, file i named Name(i) ("d000/f000" on). It is an fs.FS and an
// fs.ReadDirFS. Files must be positive.
type Tree struct {
	Files int
	Total int64
}

// Dirs is how many directories t has.
func (t Tree) Dirs() int { return (t.Files + PerDir - 1) / PerDir }

// Size is the size of file i.
func (t Tree) Size(i int) int64 {
	size := t.Total / int64(t.Files)
	if int64(i) < t.Total%int64(t.Files) {
		size++
	}
	return size
}

// Name is the slash-separated name of file i.
func (t Tree) Name(i int) string { return fmt.Sprintf("d%03d/f%03d", i/PerDir, i%PerDir) }

func dirName(d int) string { return fmt.Sprintf("d%03d", d) }

// Reader returns the bytes of file i, computed as they are read.
func (t Tree) Reader(i int) io.Reader { return &reader{i: i, size: t.Size(i)} }

// InMemory returns the whole tree held in memory, name to bytes, for the
// ways in that need it.
func (t Tree) InMemory() map[string][]byte {
	files := make(map[string][]byte, t.Files)
	for i := range t.Files {
		files[t.Name(i)], _ = io.ReadAll(t.Reader(i))
	}
	return files
}

// WriteTo creates t's directories and files through dir, which must be
// empty of them, mode 0o755 and 0o644 under the umask. It returns the
// first error, ctx's included, and leaves what it wrote until then.
func (t Tree) WriteTo(ctx context.Context, dir *os.Root) error {
	for d := range t.Dirs() {
		if err := dir.Mkdir(dirName(d), 0o755); err != nil {
			return err
		}
	}
	buf := make([]byte, 128<<10)
	for i := range t.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		f, err := dir.Create(t.Name(i))
		if err != nil {
			return err
		}
		_, err = io.CopyBuffer(f, t.Reader(i), buf)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// Measure returns the number and total size of the regular files under
// dir.
func Measure(dir string) (files, bytes int64, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().IsRegular() {
			files++
			bytes += info.Size()
		}
		return nil
	})
	return files, bytes, err
}

// reader yields file i's bytes, computed.
type reader struct {
	i         int
	off, size int64
}

func (r *reader) Read(b []byte) (int, error) {
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

type info struct {
	name string
	size int64
	dir  bool
}

func (i info) Name() string { return path.Base(i.name) }
func (i info) Size() int64  { return i.size }
func (i info) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i info) ModTime() time.Time { return time.Time{} }
func (i info) IsDir() bool        { return i.dir }
func (i info) Sys() any           { return nil }

// A file is an open file or directory of a Tree.
type file struct {
	info    info
	r       *reader       // a file's bytes
	entries []fs.DirEntry // a directory's entries not yet read
}

func (f *file) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *file) Close() error               { return nil }
func (f *file) Read(b []byte) (int, error) {
	if f.r == nil {
		return 0, &fs.PathError{Op: "read", Path: f.info.name, Err: fs.ErrInvalid}
	}
	return f.r.Read(b)
}

// ReadDir returns the next n entries of a directory, as fs.ReadDirFile
// says.
func (f *file) ReadDir(n int) ([]fs.DirEntry, error) {
	if !f.info.dir {
		return nil, &fs.PathError{Op: "readdir", Path: f.info.name, Err: fs.ErrInvalid}
	}
	if n <= 0 {
		out := f.entries
		f.entries = nil
		return out, nil
	}
	if len(f.entries) == 0 {
		return nil, io.EOF
	}
	k := min(n, len(f.entries))
	out := f.entries[:k:k]
	f.entries = f.entries[k:]
	return out, nil
}

// lookup returns the entry name, and the file's index (-1 for a directory).
func (t Tree) lookup(name string) (info, int, bool) {
	if name == "." {
		return info{name: ".", dir: true}, -1, true
	}
	dir, base, ok := strings.Cut(name, "/")
	d, err := strconv.Atoi(strings.TrimPrefix(dir, "d"))
	if err != nil || dirName(d) != dir || d < 0 || d >= t.Dirs() {
		return info{}, 0, false
	}
	if !ok {
		return info{name: name, dir: true}, -1, true
	}
	n, err := strconv.Atoi(strings.TrimPrefix(base, "f"))
	i := d*PerDir + n
	if err != nil || n < 0 || n >= PerDir || i >= t.Files || t.Name(i) != name {
		return info{}, 0, false
	}
	return info{name: name, size: t.Size(i)}, i, true
}

// Open opens the file or directory name of t.
func (t Tree) Open(name string) (fs.File, error) {
	fi, i, ok := t.lookup(name)
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	f := &file{info: fi}
	if fi.dir {
		f.entries, _ = t.ReadDir(name)
	} else {
		f.r = &reader{i: i, size: fi.size}
	}
	return f, nil
}

// ReadDir returns the entries of the directory name of t, sorted by name.
func (t Tree) ReadDir(name string) ([]fs.DirEntry, error) {
	fi, _, ok := t.lookup(name)
	if !ok || !fi.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrInvalid}
	}
	var out []fs.DirEntry
	if name == "." {
		for d := range t.Dirs() {
			out = append(out, fs.FileInfoToDirEntry(info{name: dirName(d), dir: true}))
		}
		return out, nil
	}
	d, _ := strconv.Atoi(strings.TrimPrefix(name, "d"))
	for i := d * PerDir; i < min((d+1)*PerDir, t.Files); i++ {
		out = append(out, fs.FileInfoToDirEntry(info{name: t.Name(i), size: t.Size(i)}))
	}
	return out, nil
}
