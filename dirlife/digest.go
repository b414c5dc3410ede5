package dirlife

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"slices"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/tree"
)

// A Digest identifies the content of one directory: two directories with
// one Digest hold the same tree. The zero Digest is no tree's.
//
// It is the SHA-256 of every directory, file and link in the order of a
// depth-first walk that visits a directory's entries in byte order of
// their names; for each, its kind, its cleaned path and its permission
// bits (none for a link), then a file's size and the SHA-256 of its bytes,
// or a link's target, each field length-prefixed. The modes are those on
// disk, after the umask.
type Digest [sha256.Size]byte

// String returns the digest in hexadecimal.
func (d Digest) String() string { return hex.EncodeToString(d[:]) }

// IsZero reports whether d is the zero Digest.
func (d Digest) IsZero() bool { return d == Digest{} }

// DigestFiles returns the [Digest] that l.Write gives files under the
// usual umask, 022: each file 0o644 (0o444 under [Layout.Link]) and each
// directory 0o755 (under another umask the modes on disk, and so the
// digest, differ). A publisher keeps it to tell an identical re-publish
// without a copy of the files, and checks with it, before it gives
// anything up, that Write would take them. It reads no disk, and refuses
// what Write refuses ([*NameError], [ErrNoFiles]); it needs neither Root
// nor Codec: the zero Layout serves.
func (l Layout[ID]) DigestFiles(files Files) (Digest, error) {
	p, err := planFiles(files)
	if errors.Is(err, ErrNoFiles) {
		return Digest{}, fmt.Errorf("dirlife: digest files: %w", err)
	}
	if err != nil {
		return Digest{}, err
	}
	return l.digestPlan(p, files, true), nil
}

// digestPlan returns the digest of files, planned as p, as DigestFiles
// does; without hash it takes the SHA-256 of every file to be zero: the
// digest of the tree's names, modes and sizes alone, which Verify
// with files sets beside a walk that compared the bytes instead of hashing them.
func (l Layout[ID]) digestPlan(p *names.Plan, files Files, hash bool) Digest {
	filePerm := l.filePerm()
	data := make([][]byte, len(p.Names))
	for i := range p.Names {
		data[i] = files[p.From[i]]
	}
	sums := make([][sha256.Size]byte, len(data))
	if hash {
		sums = tree.SumAll(data, min(runtime.GOMAXPROCS(0), maxHashers))
	}
	return digestPlanned(p, func(dg *tree.Digester, name string, i int) {
		dg.File(name, filePerm, int64(len(data[i])), sums[i])
	})
}

// digestPlanned returns the Digest of the tree planned as p: each
// directory of p.Dirs with the mode Write gives it, and each entry
// p.Names[i] as file enters it into dg, in the Digest's order.
func digestPlanned(p *names.Plan, file func(dg *tree.Digester, name string, i int)) Digest {
	type entry struct {
		name string
		file int // index in p.Names; -1 for a directory
	}
	entries := make([]entry, 0, len(p.Names)+len(p.Dirs))
	for _, d := range p.Dirs {
		entries = append(entries, entry{d, -1})
	}
	for i, name := range p.Names {
		entries = append(entries, entry{name, i})
	}
	slices.SortFunc(entries, func(a, b entry) int { return tree.ComparePaths(a.name, b.name) })
	var dg tree.Digester
	dg.Init()
	for _, e := range entries {
		if e.file < 0 {
			dg.Dir(e.name, defaultDirPerm)
			continue
		}
		file(&dg, e.name, e.file)
	}
	return Digest(dg.Sum())
}

// filePerm is the mode Write gives a file under the usual umask: 0o644,
// or 0o444 under Link.
func (l Layout[ID]) filePerm() fs.FileMode {
	if l.Link != nil {
		return readOnlyPerm(defaultFilePerm)
	}
	return defaultFilePerm
}
