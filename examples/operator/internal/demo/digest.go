package demo

import (
	"crypto/sha256"
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// A digest identifies a set of files and their contents.
type digest [sha256.Size]byte

// filesDigest returns the digest of files, keyed by slash-separated path.
func filesDigest(files map[string][]byte) digest {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	h := sha256.New()
	var n [8]byte
	for _, name := range names {
		binary.BigEndian.PutUint64(n[:], uint64(len(name)))
		h.Write(n[:])
		h.Write([]byte(name))
		binary.BigEndian.PutUint64(n[:], uint64(len(files[name])))
		h.Write(n[:])
		h.Write(files[name])
	}
	var d digest
	h.Sum(d[:0])
	return d
}

// dirDigest returns the digest of the regular files under dir, as
// filesDigest would of the same files. A directory that is missing, or
// holds anything but directories and regular files, is an error.
func dirDigest(dir string) (digest, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return digest{}, err
	}
	defer root.Close()
	files := map[string][]byte{}
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return &fs.PathError{Op: "digest", Path: filepath.Join(dir, p), Err: fs.ErrInvalid}
		}
		data, err := root.ReadFile(p)
		files[p] = data
		return err
	})
	if err != nil {
		return digest{}, err
	}
	return filesDigest(files), nil
}
