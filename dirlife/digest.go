package dirlife

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"path"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"leasekit.dev/dirlife/internal/names"
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
	slices.SortFunc(entries, func(a, b entry) int { return comparePaths(a.name, b.name) })
	data := make([][]byte, len(p.Names))
	for i := range p.Names {
		data[i] = files[p.From[i]]
	}
	sums := make([][sha256.Size]byte, len(data))
	if hash {
		sums = sumAll(data, min(runtime.GOMAXPROCS(0), maxHashers))
	}
	var dg digester
	dg.init()
	for _, e := range entries {
		if e.file < 0 {
			dg.dir(e.name, defaultDirPerm)
			continue
		}
		dg.file(e.name, filePerm, int64(len(data[e.file])), sums[e.file])
	}
	return dg.sum()
}

// filePerm is the mode Write gives a file under the usual umask: 0o644,
// or 0o444 under Link.
func (l Layout[ID]) filePerm() fs.FileMode {
	if l.Link != nil {
		return readOnlyPerm(defaultFilePerm)
	}
	return defaultFilePerm
}

// parallelHashBytes is the size from which sumAll hashes on more than
// one goroutine.
const parallelHashBytes = 1 << 20

// sumAll returns the SHA-256 of each of data, hashing up to hashers of
// them at once when they hold parallelHashBytes or more.
func sumAll(data [][]byte, hashers int) [][sha256.Size]byte {
	sums := make([][sha256.Size]byte, len(data))
	total := 0
	for _, d := range data {
		total += len(d)
	}
	n := min(hashers, len(data))
	if n < 2 || total < parallelHashBytes {
		for i, d := range data {
			sums[i] = sha256.Sum256(d)
		}
		return sums
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < len(data); i = int(next.Add(1) - 1) {
				sums[i] = sha256.Sum256(data[i])
			}
		})
	}
	wg.Wait()
	return sums
}

// comparePaths orders clean slash-separated paths as a depth-first walk
// visits them, each directory's entries in byte order: element by element,
// a directory before what it holds.
func comparePaths(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			ca = 0 // ends an element: before any byte of a longer one
		}
		if cb == '/' {
			cb = 0
		}
		return cmp.Compare(ca, cb)
	}
	return cmp.Compare(len(a), len(b))
}

// digestVersion starts every digest, so that a change of format changes
// every digest.
const digestVersion = "leasekit.dev/dirlife tree v1\n"

// A digester computes a Digest from entries given in the order of
// comparePaths.
type digester struct {
	h       hash.Hash
	scratch []byte
	last    string // the last path, to check the order
	n       int
}

func (d *digester) init() {
	d.h = sha256.New()
	d.h.Write([]byte(digestVersion))
}

func (d *digester) entry(kind byte, name string, perm fs.FileMode) {
	if d.n > 0 && comparePaths(d.last, name) >= 0 {
		panic("dirlife: digest entries out of order: " + d.last + " before " + name)
	}
	d.last, d.n = name, d.n+1
	b := append(d.scratch[:0], kind)
	b = binary.AppendUvarint(b, uint64(len(name)))
	b = append(b, name...)
	b = binary.AppendUvarint(b, uint64(perm.Perm()))
	d.scratch = b
	d.h.Write(b)
}

func (d *digester) dir(name string, perm fs.FileMode) { d.entry('d', name, perm) }

func (d *digester) file(name string, perm fs.FileMode, size int64, sum [sha256.Size]byte) {
	d.entry('f', name, perm)
	b := binary.AppendUvarint(d.scratch[:0], uint64(size))
	b = append(b, sum[:]...)
	d.scratch = b
	d.h.Write(b)
}

func (d *digester) link(name, target string) {
	d.entry('l', name, 0)
	b := binary.AppendUvarint(d.scratch[:0], uint64(len(target)))
	b = append(b, target...)
	d.scratch = b
	d.h.Write(b)
}

func (d *digester) sum() Digest {
	var out Digest
	d.h.Sum(out[:0])
	return out
}

// pathJoin joins a directory of a walk ("." for the top) and a name.
func pathJoin(dir, name string) string {
	if dir == "." {
		return name
	}
	return path.Join(dir, name)
}
