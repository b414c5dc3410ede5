package dirlife

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"leasekit.dev/dirlife/internal/names"
)

// digestAttr is the extended attribute in which a write under
// [Layout.RecordDigest] records its directory's [Digest], in hexadecimal.
const digestAttr = "user.leasekit.digest"

// stepDigestAttr names the setting and reading of digestAttr to the fault
// seam; an injected attrUnsupported error stands for a filesystem without
// extended attributes.
const stepDigestAttr = "digest-attr"

// ErrDigestMismatch is wrapped by the error of a [Layout.Verify] that found
// a tree other than the one whose digest it was given.
var ErrDigestMismatch = errors.New("content does not match its recorded digest")

// parseDigest parses a recorded digest: exactly its lower-case hexadecimal.
func parseDigest(b []byte) (Digest, bool) {
	var d Digest
	if len(b) != 2*len(d) || !isLowerHex(string(b)) {
		return d, false
	}
	_, err := hex.Decode(d[:], b)
	return d, err == nil
}

// recordDigest records d on the staging directory sr, before it is made
// durable and renamed into place, so that a directory that was never
// complete carries none. A filesystem that refuses the attribute is no
// error: the directory carries none, and [Layout.Adopt] will not keep it.
func (l Layout[ID]) recordDigest(sr *os.Root, stage string, d Digest) error {
	f, err := sr.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	err = l.fault(stepDigestAttr, stage)
	if err == nil {
		err = setDigestAttr(f, d)
	}
	if err != nil && !attrUnsupported(err) {
		return fmt.Errorf("record the digest of %s: %w", stage, err)
	}
	return nil
}

// Adopt is the boot path of a layout that records digests
// ([Layout.RecordDigest]): [Layout.Reset], but for the ID directories that
// carry a recorded digest, which it keeps and returns. A directory a write
// never finished carries none, so only complete ones are kept; Adopt reads
// only the attribute, and whether their content still matches it is for
// [Layout.Verify] to tell. recorded
// reports whether Root's filesystem holds extended attributes: where it
// does not, Adopt keeps nothing and empties Root as Reset does. Adopt
// needs a Codec ([ErrNoCodec]). It refuses the roots Reset refuses; on a
// failure to read an attribute it returns before removing anything, and
// otherwise fails as Reset fails.
func (l Layout[ID]) Adopt() (kept map[ID]Digest, recorded bool, err error) {
	if l.Codec == nil {
		return nil, false, ErrNoCodec
	}
	h, err := l.openRoot("adopt", true, exclusive)
	if err != nil {
		return nil, false, err
	}
	defer h.close()
	kept, keep, recorded, err := l.recordedDirs(h)
	if err != nil {
		h.unlock()
		return nil, false, fmt.Errorf("dirlife: adopt: %w", err)
	}
	return kept, recorded, l.reset(h, "adopt", keep)
}

// recordedDirs returns the ID directories of h that carry a recorded
// digest, by ID and by name, and whether h's filesystem holds extended
// attributes.
func (l Layout[ID]) recordedDirs(h *openRoot) (map[ID]Digest, map[string]bool, bool, error) {
	if h.own != byAttr {
		return nil, nil, false, nil // Root's filesystem holds no attribute
	}
	d, err := h.r.Open(".")
	if err != nil {
		return nil, nil, false, err
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, nil, false, err
	}
	dev, err := rootDevice(h, l.devOf())
	if err != nil {
		return nil, nil, false, err
	}
	kept, keep := map[ID]Digest{}, map[string]bool{}
	for _, e := range entries {
		id, ok := l.parse(e)
		if !ok {
			continue
		}
		name := e.Name()
		dg, ok, err := l.readDigest(h.r, name, dev)
		if attrUnsupported(err) {
			return nil, nil, false, nil
		}
		if err != nil {
			return nil, nil, false, err
		}
		if ok {
			kept[id], keep[name] = dg, true
		}
	}
	return kept, keep, true, nil
}

// readDigest returns the digest recorded on the directory name of r, which
// must be a directory on device dev, and whether it carries one.
func (l Layout[ID]) readDigest(r *os.Root, name string, dev uint64) (Digest, bool, error) {
	fi, err := r.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) {
		return Digest{}, false, nil
	}
	if err != nil || !fi.IsDir() || l.devOf()(fi) != dev {
		return Digest{}, false, err // not a directory of ours: garbage
	}
	f, err := r.Open(name)
	if err != nil {
		return Digest{}, false, err
	}
	defer f.Close()
	if err := l.fault(stepDigestAttr, name); err != nil {
		return Digest{}, false, err
	}
	return getDigestAttr(f)
}

// Verify reports whether id's directory holds the tree whose digest is
// want: it walks the directory as a write checks its staged tree, reading
// every file, and returns nil on a match, an error wrapping
// [ErrDigestMismatch] when the content, a mode, a name or a link target
// differs or an entry is added or missing, and a [*NameError] for an entry
// no write would publish (a setuid, setgid or sticky bit, a link out of the
// tree, a file with other hard links but a read-only one under
// [Layout.Link]). It holds Root's shared lock, so no Prune runs meanwhile,
// reads up to GOMAXPROCS files (at most 4) at once, with bounded memory
// and descriptors, and returns ctx.Err() once ctx ends and every read has
// stopped. It changes nothing but what it tells Link, holding the lock:
// Found on a match, Gone on any other outcome but the end of ctx (under
// Link it also reads the filesystem's clock by setting the directory's
// times again to what they are, see [File]).
func (l Layout[ID]) Verify(ctx context.Context, id ID, want Digest) error {
	name, err := l.name(id)
	if err != nil {
		return err
	}
	h, err := l.openRoot("verify", false, shared)
	if err != nil {
		return err
	}
	if h == nil {
		return &os.PathError{Op: "verify", Path: filepath.Join(l.Root, name), Err: fs.ErrNotExist}
	}
	defer h.release()
	return l.verifyDir(ctx, h, name, want)
}

// VerifyFiles is [Layout.Verify] of id's directory against the tree
// l.Write gives files under the usual umask, the one whose digest is
// l.DigestFiles(files), with the same checks and outcomes, for a caller
// that holds the files: each file is read and compared with its bytes in
// files instead of being hashed, so a match costs a read of the directory
// and no hash (but under Link, whose index is of the files' hashes: a
// match hashes files to enter the directory). It reads one file at a time.
func (l Layout[ID]) VerifyFiles(ctx context.Context, id ID, files Files) error {
	name, err := l.name(id)
	if err != nil {
		return err
	}
	p, err := planFiles(files)
	if err != nil {
		return err
	}
	h, err := l.openRoot("verify", false, shared)
	if err != nil {
		return err
	}
	if h == nil {
		return &os.PathError{Op: "verify", Path: filepath.Join(l.Root, name), Err: fs.ErrNotExist}
	}
	defer h.release()
	expect := make(map[string][]byte, len(p.Names))
	for i, n := range p.Names {
		expect[n] = files[p.From[i]]
	}
	return l.checkDir(ctx, h, name, l.digestPlan(p, files, false), expect)
}

// verifyName is Verify of the directory name of h, which the caller holds,
// refusing a name that is not an ID's directory name.
func (l Layout[ID]) verifyName(ctx context.Context, h *openRoot, name string, want Digest) error {
	if l.Codec == nil {
		return ErrNoCodec
	}
	id, ok := l.Codec.Parse(name)
	if !ok || names.CheckElement(name) != nil || l.Codec.Format(id) != name {
		return &NameError{Name: name, Rule: "is not the directory name of an ID: verify checks only ID directories"}
	}
	return l.verifyDir(ctx, h, name, want)
}

// verifyDir is Verify of the directory name of h, which the caller holds.
func (l Layout[ID]) verifyDir(ctx context.Context, h *openRoot, name string, want Digest) error {
	return l.checkDir(ctx, h, name, want, nil)
}

// checkDir is Verify of the directory name of h, which the caller holds,
// against want; with expect, VerifyFiles's: each regular file is compared
// with expect's bytes under its path, not hashed, and want is the digest
// of the shape alone ([Layout.digestPlan] without hash).
func (l Layout[ID]) checkDir(ctx context.Context, h *openRoot, name string, want Digest, expect map[string][]byte) error {
	dir := filepath.Join(l.Root, name)
	var found []File
	hashers := min(runtime.GOMAXPROCS(0), maxHashers)
	if expect != nil {
		hashers = 1
	}
	got, err := l.walkDir(ctx, h, name, hashers, expect, &found)
	var ne *NameError
	switch {
	case err != nil && !errors.As(err, &ne):
		err = fmt.Errorf("dirlife: verify %s: %w", dir, err)
	case err == nil && got != want && expect != nil:
		err = fmt.Errorf("dirlife: verify %s: its tree's names, modes or sizes are not those of the files given: %w", dir, ErrDigestMismatch)
	case err == nil && got != want:
		err = fmt.Errorf("dirlife: verify %s: its tree's digest is %s, recorded %s: %w", dir, got, want, ErrDigestMismatch)
	}
	if err == nil && expect != nil && l.Link != nil {
		// Link is told of the files' hashes: the walk took them as zero.
		data := make([][]byte, len(found))
		for i, e := range found {
			data[i] = expect[e.Path]
		}
		for i, sum := range sumAll(data, min(runtime.GOMAXPROCS(0), maxHashers)) {
			found[i].Sum = sum
		}
	}
	if l.linking() {
		switch {
		case err == nil:
			l.found(h.key, name, found)
		case ctx.Err() == nil || !errors.Is(err, ctx.Err()):
			l.Link.Gone(name) // even one this process wrote: no write links from it
		}
	}
	return err
}

// maxHashers bounds the files Verify hashes at once.
const maxHashers = 4

// digestDir checks and digests the directory name of h, as finish does a
// staged tree, without syncing anything, hashing up to hashers files at
// once (one, in the walk, below two); under Link, it sets *found, if not
// nil, to its files.
func (l Layout[ID]) digestDir(ctx context.Context, h *openRoot, name string, hashers int, found *[]File) (Digest, error) {
	return l.walkDir(ctx, h, name, hashers, nil, found)
}

// walkDir is digestDir, but with expect it compares each file with
// expect's bytes instead of hashing it, and takes its hash as zero.
func (l Layout[ID]) walkDir(ctx context.Context, h *openRoot, name string, hashers int, expect map[string][]byte, found *[]File) (Digest, error) {
	rfi, err := h.dir.Stat()
	if err != nil {
		return Digest{}, err
	}
	fi, err := h.r.Lstat(name)
	if err != nil {
		return Digest{}, err
	}
	if !fi.IsDir() {
		return Digest{}, &NameError{Name: name, Rule: "is not a directory"}
	}
	mode, setgid := passedOn(fi.Mode(), rfi.Mode()&fs.ModeSetgid != 0)
	if err := checkMode(name, mode); err != nil {
		return Digest{}, err
	}
	sr, err := h.r.OpenRoot(name)
	if err != nil {
		return Digest{}, err
	}
	defer sr.Close()
	w := l.newStagedWalk(ctx, sr, name, nil, false)
	w.expect = expect
	if hashers > 1 {
		w.hashers, w.slots = hashers, make(chan struct{}, hashers)
	}
	defer w.close()
	if err := w.run(setgid); err != nil {
		return Digest{}, err
	}
	if w.entries == 0 {
		return Digest{}, fmt.Errorf("it is empty: %w", ErrDigestMismatch)
	}
	if found != nil {
		*found = w.found
	}
	return w.dg.sum(), nil
}
