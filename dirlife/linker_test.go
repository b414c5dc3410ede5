//go:build unix

package dirlife

import (
	"slices"
	"sync"
)

// testLinker is the tests' Linker, of a publisher's policy: the source of
// a file is the newest file of its Sum, Size and Perm, in the directory
// Found told of last (and Gone not since), last in walk order within it.
type testLinker struct {
	mu    sync.Mutex
	dirs  map[string][]File
	order []string // the names of dirs, oldest first
}

func (x *testLinker) Source(want File) (string, File, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, dir := range slices.Backward(x.order) {
		for _, f := range slices.Backward(x.dirs[dir]) {
			if f.Sum == want.Sum && f.Size == want.Size && f.Perm == want.Perm {
				return dir, f, true
			}
		}
	}
	return "", File{}, false
}

func (x *testLinker) Found(dir string, files []File) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.goneLocked(dir)
	if x.dirs == nil {
		x.dirs = map[string][]File{}
	}
	x.dirs[dir] = files
	x.order = append(x.order, dir)
}

func (x *testLinker) Gone(dir string) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.goneLocked(dir)
}

func (x *testLinker) goneLocked(dir string) {
	delete(x.dirs, dir)
	x.order = slices.DeleteFunc(x.order, func(d string) bool { return d == dir })
}

// linked returns how many files of directory dir its write linked, and
// their bytes; ok is false when x holds no directory dir.
func (x *testLinker) linked(dir string) (files int, bytes int64, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	fs, ok := x.dirs[dir]
	for _, f := range fs {
		if f.Linked {
			files++
			bytes += f.Size
		}
	}
	return files, bytes, ok
}

// held returns a copy of the files x holds, by directory.
func (x *testLinker) held() map[string][]File {
	x.mu.Lock()
	defer x.mu.Unlock()
	out := make(map[string][]File, len(x.dirs))
	for dir, fs := range x.dirs {
		out[dir] = slices.Clone(fs)
	}
	return out
}
