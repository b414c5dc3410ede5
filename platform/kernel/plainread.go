package kernel

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"path"
	"sync/atomic"
)

// loaderReads turns the plain read of an instance off; tests turn it on to
// hold the reads through the loader equal to it.
var loaderReads atomic.Bool

// readPlain reads every file of the module in src, without parsing any,
// when the module's tree holds directories and regular files only, within
// limits (each directory listing at most MaxFiles entries, at most
// MaxFiles files and directories in all, each file at most MaxFileSize
// bytes and all at most MaxTotalSize). It returns false for any other
// tree: one with a link or anything irregular, one past a limit, or one
// it fails to read. The caller then reads the module as the loader does,
// which refuses what it must and reports why.
//
// A render of what readPlain read is the render of the module on disk:
// the loader reads, from the files in memory, the same bytes it reads
// from the directory, through the same rules and limits. Once ctx is
// done, readPlain reads nothing more and returns false.
func readPlain(ctx context.Context, limits Limits, src fileSource) (loadedModule, bool) {
	files := map[string][]byte{}
	var total int64
	entries := 0
	var walk func(dir string) bool
	walk = func(dir string) bool {
		if ctx.Err() != nil {
			return false
		}
		f, err := src.open(dir)
		if err != nil {
			return false
		}
		d, ok := f.(fs.ReadDirFile)
		if !ok {
			f.Close()
			return false
		}
		list, err := d.ReadDir(limits.MaxFiles + 1)
		f.Close()
		if (err != nil && err != io.EOF) || len(list) > limits.MaxFiles {
			return false
		}
		for _, e := range list {
			if entries++; entries > limits.MaxFiles {
				return false
			}
			name := path.Join(dir, e.Name())
			switch t := e.Type(); {
			case t.IsDir():
				if !walk(name) {
					return false
				}
			case t.IsRegular():
				data, ok := readRegular(src, name, limits.MaxFileSize)
				if !ok {
					return false
				}
				if total += int64(len(data)); total > limits.MaxTotalSize {
					return false
				}
				files[name] = data
			default:
				return false
			}
		}
		return true
	}
	if !walk(".") || ctx.Err() != nil {
		return loadedModule{}, false
	}
	return loadedModule{files: files, size: total, digest: Digest(files)}, true
}

// readRegular reads the regular file name of src, if it is one of at
// most max bytes.
func readRegular(src fileSource, name string, max int64) ([]byte, bool) {
	f, err := src.open(name)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > max {
		return nil, false
	}
	// One byte past the size it was described with tells a file that
	// grew since; it is read to its end, up to one byte past max.
	data := make([]byte, 0, fi.Size()+1)
	for int64(len(data)) <= max {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := f.Read(data[len(data):min(int64(cap(data)), max+1)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, true
		}
		if err != nil {
			return nil, false
		}
	}
	return nil, false
}

// copyPlain returns a copy of files, an instance given in memory, when
// they are within limits (see readPlain); false otherwise.
func copyPlain(limits Limits, files map[string][]byte) (loadedModule, bool) {
	if len(files) > limits.MaxFiles {
		return loadedModule{}, false
	}
	c := make(map[string][]byte, len(files))
	var total int64
	for name, data := range files {
		if int64(len(data)) > limits.MaxFileSize {
			return loadedModule{}, false
		}
		if total += int64(len(data)); total > limits.MaxTotalSize {
			return loadedModule{}, false
		}
		c[name] = bytes.Clone(data)
	}
	return loadedModule{files: c, size: total, digest: Digest(c)}, true
}
