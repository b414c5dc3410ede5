package modread

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strings"
)

// A FS is the file system the loader reads a module through. It
// trusts nothing on disk: it reads regular files only, follows symbolic
// links only where they stay in the module, stops at its limits, and
// stops at once when its context is done. Each file is read once, hashed
// as it is read, and kept: the loader's second pass over a module, and
// the module's digest, come from the bytes already read.
//
// A FS is used by one goroutine at a time.
type FS struct {
	ctx    context.Context
	src    Source
	limits Limits
	name   func(fsPath string) string // names a path in errors

	files map[string]readFile
	dirs  map[string][]fs.DirEntry
	total int64 // bytes of the files read
	err   error // the first refusal: a *FileError, a *LimitError or the context's error
}

// A readFile is one file a FS has read.
type readFile struct {
	data []byte
	sum  [sha256.Size]byte
	info fs.FileInfo
}

func NewFS(ctx context.Context, src Source, limits Limits, name func(string) string) *FS {
	return &FS{ctx: ctx, src: src, limits: limits, name: name,
		files: map[string]readFile{}, dirs: map[string][]fs.DirEntry{}}
}

// Refusal returns the first refusal, if any: what the loader made of it
// is beside the point.
func (m *FS) Refusal() error { return m.err }

// refuse records err as the refusal, unless there is one already, and
// returns it.
func (m *FS) refuse(err error) error {
	if m.err == nil {
		m.err = err
	}
	return err
}

// live returns the context's error once it is done, or an earlier
// refusal: after either, the FS serves nothing more. It does not
// call the context's Err unless Done is closed, so a context that counts
// its Err calls sees only those of the caller's goroutine.
func (m *FS) live() error {
	if m.err != nil {
		return m.err
	}
	select {
	case <-m.ctx.Done():
		return m.refuse(m.ctx.Err())
	default:
		return nil
	}
}

// Digest returns the Digest of every file read.
func (m *FS) Digest() string {
	return digestSums(m.files, func(f readFile) (int, [sha256.Size]byte) { return len(f.data), f.sum })
}

// Size returns the bytes of the files read.
func (m *FS) Size() int64 { return m.total }

// Files returns the bytes of every file read, by name. The slices are
// those the FS keeps, which it never changes.
func (m *FS) Files() map[string][]byte {
	files := make(map[string][]byte, len(m.files))
	for name, f := range m.files {
		files[name] = f.data
	}
	return files
}

// resolve describes name, following a symbolic link only where it stays
// in the module. A missing name is an error, but no refusal: the loader
// looks for files that may not be there.
func (m *FS) resolve(op, name string) (fs.FileInfo, error) {
	if err := m.live(); err != nil {
		return nil, err
	}
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	fi, err := m.src.Lstat(name)
	if err != nil {
		return nil, err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, err := m.src.Stat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil, m.refuse(&FileError{File: m.name(name), Rule: "is a symbolic link to nothing", Err: err})
		case err != nil:
			// Out of the module, or in a loop: os.Root resolves a link
			// only within the module.
			return nil, m.refuse(&FileError{File: m.name(name), Rule: "is a symbolic link that leads out of the module or does not resolve in it", Err: err})
		}
		fi = target
	}
	if !fi.Mode().IsRegular() && !fi.IsDir() {
		return nil, m.refuse(irregular(m.name(name), fi.Mode()))
	}
	return fi, nil
}

// irregular is the refusal of a file that is neither a regular file nor a
// directory.
func irregular(name string, mode fs.FileMode) *FileError {
	kind := "an irregular file"
	switch t := mode.Type(); {
	case t&fs.ModeNamedPipe != 0:
		kind = "a named pipe"
	case t&fs.ModeSocket != 0:
		kind = "a socket"
	case t&fs.ModeDevice != 0:
		kind = "a device"
	}
	return &FileError{File: name, Rule: fmt.Sprintf("is %s (%v), not a regular file", kind, mode)}
}

// Stat implements fs.StatFS.
func (m *FS) Stat(name string) (fs.FileInfo, error) {
	if f, ok := m.files[name]; ok {
		return f.info, nil
	}
	return m.resolve("stat", name)
}

// ReadFile implements fs.ReadFileFS. It returns a copy of the bytes it
// keeps.
func (m *FS) ReadFile(name string) ([]byte, error) {
	f, err := m.readFile(name)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(f.data), nil
}

func (m *FS) readFile(name string) (readFile, error) {
	if f, ok := m.files[name]; ok {
		return f, nil
	}
	fi, err := m.resolve("read", name)
	if err != nil {
		return readFile{}, err
	}
	if fi.IsDir() {
		return readFile{}, &fs.PathError{Op: "read", Path: name, Err: errors.New("is a directory")}
	}
	if err := m.checkSize("MaxFileSize", name, fi.Size(), m.limits.MaxFileSize); err != nil {
		return readFile{}, err
	}
	if err := m.checkSize("MaxFiles", name, int64(len(m.files)+1), int64(m.limits.MaxFiles)); err != nil {
		return readFile{}, err
	}
	data, fi, err := m.read(name)
	if err != nil {
		return readFile{}, err
	}
	if err := m.checkSize("MaxTotalSize", name, m.total+int64(len(data)), m.limits.MaxTotalSize); err != nil {
		return readFile{}, err
	}
	if path.Ext(name) == ".cue" || path.Ext(name) == ".json" {
		if depth, _ := Depth(data, m.limits.MaxDepth); depth > m.limits.MaxDepth {
			return readFile{}, m.refuse(&LimitError{Limit: "MaxDepth", File: m.name(name), Value: int64(depth), Max: int64(m.limits.MaxDepth)})
		}
	}
	f := readFile{data: data, sum: sha256.Sum256(data), info: fi}
	m.files[name] = f
	m.total += int64(len(data))
	return f, nil
}

// read reads the regular file name, at most MaxFileSize bytes of it.
func (m *FS) read(name string) ([]byte, fs.FileInfo, error) {
	f, err := m.src.Open(name)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	// What was opened is checked again: name may have changed since it
	// was described.
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, m.refuse(irregular(m.name(name), fi.Mode()))
	}
	// One byte past the limit tells a file past it from one at it.
	data, err := io.ReadAll(io.LimitReader(f, min(m.limits.MaxFileSize, math.MaxInt64-1)+1))
	if err != nil {
		return nil, nil, err
	}
	if err := m.checkSize("MaxFileSize", name, int64(len(data)), m.limits.MaxFileSize); err != nil {
		return nil, nil, err
	}
	if err := m.live(); err != nil {
		return nil, nil, err
	}
	return data, fi, nil
}

// checkSize refuses value past max, for the named limit.
func (m *FS) checkSize(limit, name string, value, max int64) error {
	if value <= max {
		return nil
	}
	return m.refuse(&LimitError{Limit: limit, File: m.name(name), Value: value, Max: max})
}

// ReadDir implements fs.ReadDirFS: the entries of the directory name,
// sorted by name. A directory of more than MaxFiles entries is refused.
func (m *FS) ReadDir(name string) ([]fs.DirEntry, error) {
	if entries, ok := m.dirs[name]; ok {
		return slices.Clone(entries), nil
	}
	fi, err := m.resolve("readdir", name)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	f, err := m.src.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, ok := f.(fs.ReadDirFile)
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	var entries []fs.DirEntry
	for {
		batch, err := d.ReadDir(256)
		entries = append(entries, batch...)
		if err := m.checkSize("MaxFiles", name, int64(len(entries)), int64(m.limits.MaxFiles)); err != nil {
			return nil, err
		}
		if err == io.EOF || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return nil, err
		}
		if err := m.live(); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	m.dirs[name] = entries
	return slices.Clone(entries), nil
}

// Open implements fs.FS, with a file or directory held in memory.
func (m *FS) Open(name string) (fs.File, error) {
	fi, err := m.Stat(name)
	if err != nil {
		return nil, err
	}
	if fi.IsDir() {
		entries, err := m.ReadDir(name)
		if err != nil {
			return nil, err
		}
		return &openDir{info: fi, entries: entries}, nil
	}
	f, err := m.readFile(name)
	if err != nil {
		return nil, err
	}
	return &openFile{Reader: bytes.NewReader(f.data), info: f.info}, nil
}

// An openFile is a file read into memory, opened.
type openFile struct {
	*bytes.Reader
	info fs.FileInfo
}

func (f *openFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *openFile) Close() error               { return nil }

// An openDir is a directory listed into memory, opened.
type openDir struct {
	info    fs.FileInfo
	entries []fs.DirEntry
}

func (d *openDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *openDir) Close() error               { return nil }
func (d *openDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.Name(), Err: errors.New("is a directory")}
}

func (d *openDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if n <= 0 {
		all := d.entries
		d.entries = nil
		return all, nil
	}
	if len(d.entries) == 0 {
		return nil, io.EOF
	}
	n = min(n, len(d.entries))
	batch := d.entries[:n]
	d.entries = d.entries[n:]
	return batch, nil
}
