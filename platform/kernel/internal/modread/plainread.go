package modread

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"path"
)

// ReadPlain reads every file of the module in src, without parsing any,
// when the module's tree holds directories and regular files only, within
// limits (each directory listing at most MaxFiles entries, at most
// MaxFiles files and directories in all, each file at most MaxFileSize
// bytes and all at most MaxTotalSize). It returns false for any other
// tree: one with a link or anything irregular, one past a limit, or one
// it fails to read. The caller then reads the module as the loader does,
// which refuses what it must and reports why.
//
// A render of what ReadPlain read is the render of the module on disk:
// the loader reads, from the files in memory, the same bytes it reads
// from the directory, through the same rules and limits. Once ctx is
// done, ReadPlain reads nothing more and returns false.
func ReadPlain(ctx context.Context, limits Limits, src Source) (Module, bool) {
	files := map[string][]byte{}
	var total int64
	entries := 0
	var walk func(dir string) bool
	walk = func(dir string) bool {
		if ctx.Err() != nil {
			return false
		}
		f, err := src.Open(dir)
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
		return Module{}, false
	}
	return Module{Files: files, Size: total, Digest: Digest(files)}, true
}

// readRegular reads the regular file name of src, if it is one of at
// most max bytes.
func readRegular(src Source, name string, max int64) ([]byte, bool) {
	f, err := src.Open(name)
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

// CopyPlain returns a copy of files, an instance given in memory, when
// they are within limits (see ReadPlain); false otherwise.
func CopyPlain(limits Limits, files map[string][]byte) (Module, bool) {
	if len(files) > limits.MaxFiles {
		return Module{}, false
	}
	c := make(map[string][]byte, len(files))
	var total int64
	for name, data := range files {
		if int64(len(data)) > limits.MaxFileSize {
			return Module{}, false
		}
		if total += int64(len(data)); total > limits.MaxTotalSize {
			return Module{}, false
		}
		c[name] = bytes.Clone(data)
	}
	return Module{Files: c, Size: total, Digest: Digest(c)}, true
}
