package dirlife

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"sync"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/sys"
	"leasekit.dev/dirlife/internal/tree"
)

// The steps of a streamed write beyond those of a Write, as named to the
// fault seam.
const (
	stepFill = "fill" // the caller's fill of the staging directory, or the copy
	stepHash = "hash" // reading a staged file back for the digest
)

// StreamOptions adjusts a streamed write. The zero value publishes
// whatever is staged.
type StreamOptions struct {
	// Current, unless zero, is the Digest of the content the ID's
	// directory holds now, as a publisher recorded it. A streamed write
	// whose staged content has this digest removes its staging directory
	// and publishes nothing: an identical re-publish costs the write and
	// its hashing, and leaves the directory, and the readers inside it,
	// undisturbed.
	Current Digest

	// Existing, when set, lets a write of content already on disk under
	// another ID keep nothing of its own. Once the staged digest is known
	// and is not Current, the write calls Existing with it and a verify
	// function, holding Root's shared lock: Existing must call no method
	// of a Layout on Root. verify(name) checks the ID directory name (as
	// Codec formats an ID) against the staged digest, reading every file,
	// and returns what [Layout.Verify] would, with the same upkeep of
	// Link. When Existing returns true, the staging directory is removed
	// and nothing is published, as for Current (Published false); an error
	// ends the write with it, publishing nothing.
	Existing func(staged Digest, verify func(name string) error) (bool, error)
}

// Written reports a write that published, or found its content current
// or on disk already.
type Written struct {
	Dir       string // the ID's directory, [Layout.Dir]
	Digest    Digest // of the staged content
	Published bool   // false when Digest equals StreamOptions.Current, or Existing found it

	// Bytes is the size of the staged regular files. Wrote is how many of
	// those bytes the write passed to write(2) (a WriteStream's fill is
	// taken to have written all it staged), and Linked the number of files
	// hard-linked from another directory under [Layout.Link].
	Bytes, Wrote int64
	Linked       int
}

// WriteStream publishes as id's directory the tree fill makes in dir, an
// [os.Root] of a fresh staging directory: every entry is checked
// ([*NameError]), digested, made durable unless NoSync, and renamed into
// place, swapping out an existing directory, which is removed before
// WriteStream returns unless [Layout.DeferRemoval]. Nothing is published
// if the Digest is opts.Current, or opts.Existing finds it on disk. fill
// runs under Root's shared lock: it must honour ctx and call no method of
// a Layout on Root. Under [Layout.Link] the write tells Link, holding the
// lock, of the directory it publishes (Found). Besides fill's, it holds
// bounded descriptors, and memory that does not grow with the bytes.
//
// On failure id's directory is as it was and the staging directory is
// removed (a panic in fill is raised again then), but for the errors of a
// published directory, [ErrNotDurable] and [*StalledError], which come
// with the Written.
func (l Layout[ID]) WriteStream(ctx context.Context, id ID, fill func(ctx context.Context, dir *os.Root) error, opts StreamOptions) (Written, error) {
	return l.stream(ctx, id, func(ctx context.Context, sr *os.Root, _ string, _ *linker) (filled, error) {
		return filled{}, fill(ctx, sr)
	}, opts)
}

// A filler fills the staging directory sr, named stage in the root; k
// links its unchanged files under [Layout.Link].
type filler func(ctx context.Context, sr *os.Root, stage string, k *linker) (filled, error)

// filled is what a filler knows of what it wrote.
type filled struct {
	// sums are the sizes and digests of the files it wrote, by path in
	// the staging directory, if it knows them: that spares reading them
	// back.
	sums map[string]fileSum
	// synced reports that it synced every file it wrote (not the
	// directories).
	synced bool
	// wrote is the bytes it passed to write(2), when counted.
	wrote   int64
	counted bool
}

// fileSum is the size and SHA-256 of a staged file, and whether it is a
// hard link to a source ([Layout.Link]), whose bytes are on disk.
type fileSum struct {
	size   int64
	sum    [sha256.Size]byte
	linked bool
}

func (l Layout[ID]) stream(ctx context.Context, id ID, fill filler, opts StreamOptions) (Written, error) {
	name, err := l.name(id)
	if err != nil {
		return Written{}, err
	}
	if err := ctx.Err(); err != nil {
		return Written{}, l.writeErr(id, err)
	}
	if l.Link != nil && !sys.HardLinks {
		return Written{}, sys.ErrNoLinks
	}
	w := Written{Dir: l.Dir(id)}
	var found []File // the files published, for l.Link
	var key sys.Key  // Root's
	stage := func(h *openRoot, stage string) (publish bool, err error) {
		r := h.r
		key = h.key
		sr, err := r.OpenRoot(stage)
		if err != nil {
			return false, err
		}
		defer sr.Close()
		checked := false
		defer func() {
			if !checked { // also when fill exits its goroutine
				tree.MakeRemovable(sr, ".")
			}
		}()
		// The setgid bit the staging directory has before fill runs is
		// Root's, passed on by the system, not the caller's.
		fi, err := sr.Lstat(".")
		if err != nil {
			return false, err
		}
		inherited := fi.Mode()&fs.ModeSetgid != 0
		// Write's files are 0o444 under Link: their mode under the umask,
		// the one the staging directory was made under, is known before
		// they are.
		k := &linker{ctx: ctx, x: l.Link, root: r, key: key, stage: stage, fault: l.fault, readOnly: l.Link != nil, filePerm: defaultFilePerm}
		if k.readOnly {
			k.filePerm = readOnlyPerm(defaultFilePerm) & fi.Mode().Perm()
		}
		defer k.close()
		f, err := l.runFill(ctx, fill, sr, stage, k)
		if err == nil {
			err = ctx.Err()
		}
		if err != nil {
			return false, err
		}
		var wk walked
		skipped := false
		skip := func(sum Digest) (bool, error) {
			var err error
			if sum == opts.Current {
				skipped = true
			} else if opts.Existing != nil {
				skipped, err = opts.Existing(sum, func(name string) error { return l.verifyName(ctx, h, name, sum) })
			}
			return skipped, err
		}
		if w.Digest, wk, err = l.finish(ctx, r, h.dir, sr, stage, inherited, f, skip); err != nil {
			return false, err
		}
		w.Bytes, w.Wrote, w.Linked, found = wk.bytes, wk.bytes, wk.linked, wk.found
		if f.counted {
			w.Wrote = f.wrote
		}
		checked = true // every directory is the owner's to empty
		if err := ctx.Err(); err != nil {
			return false, err
		}
		return !skipped, nil
	}
	published, err := l.write(name, stage, func() {
		if l.Link != nil {
			l.found(key, name, found)
		}
	})
	w.Published = published
	var p *tree.Panic
	var pe *publishedError
	switch {
	case errors.As(err, &p):
		panic(p.Value)
	case errors.As(err, &pe):
		return w, pe.err
	case err != nil:
		return Written{}, l.writeErr(id, err)
	}
	return w, nil
}

// runFill calls fill, turning a panic into a *tree.Panic.
func (l Layout[ID]) runFill(ctx context.Context, fill filler, sr *os.Root, stage string, k *linker) (f filled, err error) {
	if err := l.fault(stepFill, stage); err != nil {
		return f, &os.PathError{Op: "fill", Path: stage, Err: err}
	}
	defer func() {
		if v := recover(); v != nil {
			err = &tree.Panic{Value: v}
		}
	}()
	return fill(ctx, sr, stage, k)
}

// finish checks the filled staging directory sr entry by entry, digests
// it and, unless NoSync or skip reports its digest (it is then
// discarded), makes it durable. inherited reports whether the staging
// directory had the setgid bit from Root before it was filled. Under Link
// it clears the write bits of the files the fill left with some.
func (l Layout[ID]) finish(ctx context.Context, r *os.Root, dir *os.File, sr *os.Root, stage string, inherited bool, f filled, skip func(Digest) (bool, error)) (Digest, walked, error) {
	fi, err := sr.Lstat(".")
	if err != nil {
		return Digest{}, walked{}, err
	}
	mode, setgid := passedOn(fi.Mode(), inherited)
	if err := names.CheckMode(".", mode); err != nil {
		return Digest{}, walked{}, err // the directory itself
	}
	sync := l.syncMode()
	w := l.newStagedWalk(ctx, sr, stage, f.sums, !l.NoSync && sync == syncFiles && !f.synced)
	w.readOnly = l.Link != nil
	defer w.close()
	if err := w.run(setgid); err != nil {
		return Digest{}, walked{}, err
	}
	if w.entries == 0 {
		return Digest{}, walked{}, ErrNoFiles
	}
	sum := Digest(w.dg.Sum())
	if skipped, err := skip(sum); err != nil || skipped {
		return sum, w.walked, err
	}
	if l.RecordDigest {
		if err := l.recordDigest(sr, stage, sum); err != nil {
			return Digest{}, walked{}, err
		}
	}
	if l.NoSync {
		return sum, w.walked, nil
	}
	if sync == syncFS {
		if err := l.fault(stepSync, stage); err != nil {
			return Digest{}, walked{}, &os.PathError{Op: "syncfs", Path: stage, Err: err}
		}
		if err := sys.Syncfs(dir); err != nil {
			return Digest{}, walked{}, &os.PathError{Op: "syncfs", Path: stage, Err: err}
		}
		return sum, w.walked, nil
	}
	// Directories after their files, deepest first, the staging directory
	// last, as stage does: reverse walk order puts every directory before
	// its parent.
	for i := len(w.dirs) - 1; i >= 0; i-- {
		if err := l.syncStaged(w.cur, stage, w.dirs[i]); err != nil {
			return Digest{}, walked{}, err
		}
	}
	if err := l.syncDir(r, stage); err != nil {
		return Digest{}, walked{}, err
	}
	return sum, w.walked, nil
}

// walked is what a stagedWalk counted of the regular files it visited.
type walked struct {
	bytes  int64  // their sizes
	linked int    // those linked from a source
	found  []File // every one of them, under Link
}

// A stagedWalk visits a filled staging tree depth first, each directory's
// entries in byte order (the order of a Digest), through a tree.Cursor, so
// that it holds a bounded number of descriptors.
type stagedWalk struct {
	ctx       context.Context
	sr        *os.Root
	cur       *tree.Cursor
	stage     string
	sums      map[string]fileSum // files whose digest the fill knows
	expect    map[string][]byte  // Verify's with files: each file's bytes, compared instead of hashed
	fault     faultFunc
	syncFiles bool  // fsync each file as it is visited
	shared    bool  // under Link: read-only files may have other hard links, and files are collected
	readOnly  bool  // a write's check under Link: clear the files' write bits
	clock     int64 // under Link: the filesystem's clock before any file was stamped; zero if unknown

	walked
	dg      tree.Digester
	hash    hash.Hash
	buf     *[]byte  // from tree.Bufs, once needed
	dirs    []string // visited, in walk order
	entries int

	// With hashers set, the files whose digest is read back are hashed
	// that many at once, each on a goroutine of its own; the entries wait
	// in walk order in queue, at most hashWindow of them, for the
	// tree.Digester. Only a walk that syncs nothing hashes aside.
	hashers int
	slots   chan struct{}
	running sync.WaitGroup
	queue   []queued
}

// hashWindow is how many entries a walk that hashes aside holds back
// for the tree.Digester, per hasher.
const hashWindow = 8

// A queued entry awaits its turn at the tree.Digester, and, for a file hashed
// aside, its hash.
type queued struct {
	kind   byte // 'd', 'f' or 'l', as the tree.Digester's
	rel    string
	perm   fs.FileMode
	target string    // a link's
	at     sys.Stamp // a file's
	sum    fileSum   // a file's, once known
	hashed *hashJob  // a file hashed aside
	// other: the bytes of a file, read, were not those of the file at
	// stamps (another inode at its path, or a stamp moved before the
	// read), so at tells nothing of them.
	other bool
}

// A hashJob is the hash of one file, read aside; done is closed once sum
// or err is set.
type hashJob struct {
	done  chan struct{}
	sum   fileSum
	other bool // as queued's
	err   error
}

// newStagedWalk returns a walk of sr, the tree of stage, that checks and
// digests what it visits: a write's check of what it staged, and
// Verify's of a kept directory. sums are the files whose digest is known;
// syncFiles fsyncs each file as it is visited. Close releases it.
func (l Layout[ID]) newStagedWalk(ctx context.Context, sr *os.Root, stage string, sums map[string]fileSum, syncFiles bool) *stagedWalk {
	w := &stagedWalk{ctx: ctx, sr: sr, cur: tree.NewCursor(sr), stage: stage, sums: sums,
		fault: l.fault, syncFiles: syncFiles, shared: l.Link != nil, hash: sha256.New()}
	w.dg.Init()
	return w
}

// close waits for the files being hashed aside, and releases the walk's
// descriptors and its buffer.
func (w *stagedWalk) close() {
	w.running.Wait()
	w.cur.Close()
	if w.buf != nil {
		tree.Bufs.Put(w.buf)
		w.buf = nil
	}
}

// passedOn returns the mode of a staged directory without the setgid bit
// when the system gave it that bit, as it gives it every directory made in
// one that has it (parent reports whether the directory's parent has it,
// or, for the staging directory, whether Root gave it the bit), and
// reports whether the directory has the bit so passed on. Any other
// setgid bit is the caller's, and left for checkMode to refuse.
func passedOn(mode fs.FileMode, parent bool) (fs.FileMode, bool) {
	if parent && mode.IsDir() && mode&fs.ModeSetgid != 0 {
		return mode &^ fs.ModeSetgid, true
	}
	return mode, false
}

// run walks the whole tree (see walk) and has every entry digested. An
// error is the first in walk order.
func (w *stagedWalk) run(setgid bool) error {
	if w.shared {
		w.clock = w.readClock()
	}
	err := w.walk(".", setgid)
	if ferr := w.flush(true); ferr != nil {
		return ferr // an entry before the one walk failed at
	}
	return err
}

// readClock returns the clock of the walked directory's filesystem (see
// fsClock), or zero.
func (w *stagedWalk) readClock() int64 {
	if w.fault(stepClock, w.stage) != nil {
		return 0
	}
	d, err := w.sr.Open(".")
	if err != nil {
		return 0
	}
	defer d.Close()
	if now, ok := sys.FSClock(d); ok {
		return now
	}
	return 0
}

// emit has q digested: at once without hashers, else after the entries
// queued before it.
func (w *stagedWalk) emit(q queued) error {
	if w.hashers == 0 {
		w.digest(q)
		return nil
	}
	w.queue = append(w.queue, q)
	return w.flush(false)
}

// digest adds q, its file's sum known, to the digest.
func (w *stagedWalk) digest(q queued) {
	switch q.kind {
	case 'd':
		w.dg.Dir(q.rel, q.perm)
	case 'l':
		w.dg.Link(q.rel, q.target)
	default:
		w.digestFile(q.rel, q.perm, q.sum, q.at, q.other)
	}
}

// flush digests the queued entries in order while their hashes are done;
// with all, or while more than the window waits, it waits for them. It
// returns the error of the first file whose hash failed, leaving it and
// the entries after it queued.
func (w *stagedWalk) flush(all bool) error {
	for len(w.queue) > 0 {
		q := &w.queue[0]
		if j := q.hashed; j != nil {
			if all || len(w.queue) > hashWindow*w.hashers {
				<-j.done
			} else {
				select {
				case <-j.done:
				default:
					return nil
				}
			}
			if j.err != nil {
				return j.err
			}
			q.sum, q.other = j.sum, j.other
		}
		w.digest(*q)
		w.queue = w.queue[1:]
	}
	w.queue = w.queue[:0]
	return nil
}

// hashAside starts hashing the file rel, stamped at, on a goroutine of
// its own once fewer than hashers are, and returns its job.
func (w *stagedWalk) hashAside(rel string, at sys.Stamp) *hashJob {
	j := &hashJob{done: make(chan struct{})}
	w.slots <- struct{}{}
	w.running.Add(1)
	go func() {
		defer w.running.Done()
		defer func() { <-w.slots }()
		defer close(j.done)
		j.sum, j.other, j.err = w.hashFile(rel, at)
	}()
	return j
}

// hashFile reads the file rel, stamped at, back for its digest, with a
// buffer and a hash of its own, and reports whether the file it read was
// another (see stamped).
func (w *stagedWalk) hashFile(rel string, at sys.Stamp) (fileSum, bool, error) {
	f, err := w.sr.OpenFile(rel, sys.SyncOpenFlag, 0)
	if err != nil {
		return fileSum{}, false, err
	}
	defer f.Close()
	other := !w.stamped(f, at)
	buf := tree.Bufs.Get().(*[]byte)
	defer tree.Bufs.Put(buf)
	sum, err := w.read(f, path.Join(w.stage, rel), *buf, sha256.New())
	return sum, other, err
}

// stamped reports, under Link, whether f, open and not read yet, is the
// file the walk stamped at, as it stamped it: only then do the bytes read
// from it tell those of the file at stamps. A file opened by its path may
// be another inode than the one the walk stamped through its directory's
// descriptor (a directory renamed in between), and a file's stamp may
// have moved since.
func (w *stagedWalk) stamped(f *os.File, at sys.Stamp) bool {
	if !w.shared {
		return true // no stamp is kept
	}
	fi, err := f.Stat()
	return err == nil && sys.StampOf(fi) == at
}

// walk visits the entries of dir; setgid reports whether dir has the
// setgid bit that Root passed on (see passedOn).
func (w *stagedWalk) walk(dir string, setgid bool) error {
	h, err := w.cur.At(dir)
	if err != nil {
		return err
	}
	list, err := tree.ReadNames(h.Root())
	h.Release()
	if err != nil {
		return err
	}
	slices.Sort(list)
	if err := names.CheckSiblingCase(dir, list); err != nil {
		return err
	}
	for _, base := range list {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		rel := tree.PathJoin(dir, base)
		if _, err := names.CleanFile(rel); err != nil {
			return err
		}
		w.entries++
		h, err := w.cur.At(dir)
		if err != nil {
			return err
		}
		isDir, sub, err := w.entry(h, base, rel, setgid)
		h.Release() // before descending: the cursor bounds what stays open
		if err != nil {
			return err
		}
		if isDir {
			if err := w.walk(rel, sub); err != nil {
				return err
			}
		}
	}
	return nil
}

// entry checks and digests the entry base of directory h, rel in the
// tree, whose parent's setgid bit Root passed on when parentSetgid is
// set. It reports whether the entry is a directory to descend into, and
// whether that directory has the bit so passed on.
func (w *stagedWalk) entry(h *tree.Dir, base, rel string, parentSetgid bool) (isDir, setgid bool, err error) {
	fi, err := h.Root().Lstat(base)
	if err != nil {
		return false, false, err
	}
	mode, setgid := passedOn(fi.Mode(), parentSetgid)
	if err := names.CheckMode(rel, mode); err != nil {
		return false, false, err
	}
	switch mode.Type() {
	case fs.ModeDir:
		w.dirs = append(w.dirs, rel)
		return true, setgid, w.emit(queued{kind: 'd', rel: rel, perm: mode.Perm()})
	case fs.ModeSymlink:
		target, err := h.Root().Readlink(base)
		if err != nil {
			return false, false, err
		}
		if err := names.CheckLinkTarget(rel, rel, target); err != nil {
			return false, false, err
		}
		if err := names.CheckResolves(w.sr, rel); err != nil {
			return false, false, err
		}
		return false, false, w.emit(queued{kind: 'l', rel: rel, target: target})
	}
	return false, false, w.regular(h, base, rel, fi)
}

// regular checks and digests the regular file base of directory h.
func (w *stagedWalk) regular(h *tree.Dir, base, rel string, fi fs.FileInfo) error {
	mode := fi.Mode()
	if n, ok := sys.LinkCount(fi); ok && n > 1 && !(w.shared && mode&0o222 == 0) {
		return &NameError{Name: rel, Rule: fmt.Sprintf("has %d hard links: each file of the directory must be its own (or, under Layout.Link, read-only)", n)}
	}
	if w.readOnly && mode&0o222 != 0 {
		mode = readOnlyPerm(mode)
		if err := h.Root().Chmod(base, mode); err != nil {
			return err
		}
		var err error
		if fi, err = h.Root().Lstat(base); err != nil { // its stamp, changed by the chmod
			return err
		}
	}
	at := sys.StampOf(fi)
	if w.expect != nil {
		other, err := w.compare(h, base, rel, fi.Size(), at)
		if err != nil {
			return err
		}
		// The hash is zero on both sides of Verify's comparison with files.
		return w.emit(queued{kind: 'f', rel: rel, perm: mode.Perm(), at: at, sum: fileSum{size: fi.Size()}, other: other})
	}
	sum, known := w.sums[rel]
	if known && sum.size != fi.Size() {
		return fmt.Errorf("dirlife: %s: %d bytes staged, %d copied", path.Join(w.stage, rel), fi.Size(), sum.size)
	}
	if !known && w.hashers > 0 && !w.syncFiles {
		return w.emit(queued{kind: 'f', rel: rel, perm: mode.Perm(), at: at, hashed: w.hashAside(rel, at)})
	}
	// A linked file's bytes are another directory's, durable with it.
	other := false
	if !known || (w.syncFiles && !sum.linked) {
		got, o, err := w.file(h, base, rel, !known, at)
		if err != nil {
			return err
		}
		if !known {
			sum, other = got, o
		}
	}
	return w.emit(queued{kind: 'f', rel: rel, perm: mode.Perm(), at: at, sum: sum, other: other})
}

// digestFile adds the regular file rel, stamped at, to the digest and to
// what the walk counted; other reports that the bytes of sum were read
// from another file than the one at stamps.
func (w *stagedWalk) digestFile(rel string, perm fs.FileMode, sum fileSum, at sys.Stamp, other bool) {
	w.dg.File(rel, perm, sum.size, sum.sum)
	w.bytes += sum.size
	if sum.linked {
		w.linked++
	}
	if w.shared {
		// Bytes this write wrote or the walk read after it took at, in a
		// later tick than at.Ctime, are known while at stays.
		known := !sum.linked && !other && at.Ctime != 0 && w.clock != 0 && at.Ctime < w.clock
		w.found = append(w.found, File{Path: rel, Sum: sum.sum, Size: sum.size, Perm: perm, Linked: sum.linked, known: known, at: at})
	}
}

// compare reads the file base of directory h, rel in the tree, of size
// bytes and stamped at as its directory entry says, to its end, and
// returns an error wrapping ErrDigestMismatch unless it holds exactly
// w.expect[rel]. It reports whether the file it read was another (see
// stamped).
func (w *stagedWalk) compare(h *tree.Dir, base, rel string, size int64, at sys.Stamp) (other bool, err error) {
	name := path.Join(w.stage, rel)
	want, ok := w.expect[rel]
	if !ok || int64(len(want)) != size {
		return false, fmt.Errorf("%s is not a file given, or not of its size: %w", rel, ErrDigestMismatch)
	}
	if err := w.fault(stepHash, name); err != nil {
		return false, &os.PathError{Op: "read", Path: name, Err: err}
	}
	f, err := h.Root().OpenFile(base, os.O_RDONLY, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	other = !w.stamped(f, at) // before the read
	return other, w.compareBytes(f, rel, want)
}

// compareBytes reads f, the file rel, to its end, and returns an error
// wrapping ErrDigestMismatch unless it holds exactly want.
func (w *stagedWalk) compareBytes(f *os.File, rel string, want []byte) error {
	if w.buf == nil {
		w.buf = tree.Bufs.Get().(*[]byte)
	}
	buf := *w.buf
	for {
		n, err := f.Read(buf)
		if n > len(want) || !bytes.Equal(buf[:n], want[:n]) {
			return fmt.Errorf("%s differs from the file given: %w", rel, ErrDigestMismatch)
		}
		want = want[n:]
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if err := w.ctx.Err(); err != nil {
			return err
		}
	}
	if len(want) > 0 {
		return fmt.Errorf("%s is shorter than the file given: %w", rel, ErrDigestMismatch)
	}
	return nil
}

// readOnlyPerm returns mode without its write bits.
func readOnlyPerm(mode fs.FileMode) fs.FileMode { return mode &^ 0o222 }

// file opens a staged file, stamped at, reads it back for its digest
// when digest is set, and fsyncs it under syncFiles. It reports whether
// the file it read was another (see stamped).
func (w *stagedWalk) file(h *tree.Dir, base, rel string, digest bool, at sys.Stamp) (sum fileSum, other bool, err error) {
	name := path.Join(w.stage, rel)
	f, err := h.Root().OpenFile(base, sys.SyncOpenFlag, 0)
	if err != nil {
		return sum, false, err
	}
	defer f.Close()
	if digest {
		other = !w.stamped(f, at)
		if w.buf == nil {
			w.buf = tree.Bufs.Get().(*[]byte)
		}
		w.hash.Reset()
		if sum, err = w.read(f, name, *w.buf, w.hash); err != nil {
			return sum, other, err
		}
	}
	if w.syncFiles {
		if err := w.fault(stepSync, name); err != nil {
			return sum, other, &os.PathError{Op: "sync", Path: name, Err: err}
		}
		if err := f.Sync(); err != nil {
			return sum, other, err
		}
	}
	return sum, other, f.Close()
}

// read reads f, the staged file name, to its end through buf, for its
// size and its hash by h.
func (w *stagedWalk) read(f *os.File, name string, buf []byte, h hash.Hash) (fileSum, error) {
	var sum fileSum
	if err := w.fault(stepHash, name); err != nil {
		return sum, &os.PathError{Op: "read", Path: name, Err: err}
	}
	for {
		n, err := f.Read(buf)
		h.Write(buf[:n])
		sum.size += int64(n)
		if err == io.EOF {
			break
		}
		if err != nil {
			return sum, err
		}
		if err := w.ctx.Err(); err != nil {
			return sum, err
		}
	}
	h.Sum(sum.sum[:0])
	return sum, nil
}
