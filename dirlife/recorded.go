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
	"leasekit.dev/dirlife/internal/rootlock"
	"leasekit.dev/dirlife/internal/tree"
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
	if len(b) != 2*len(d) || !names.IsLowerHex(string(b)) {
		return d, false
	}
	_, err := hex.Decode(d[:], b)
	return d, err == nil
}

// recordDigest records d on the staging directory sr, before it is made
// durable and renamed into place, so that a directory that was never
// complete carries none. A filesystem that refuses the attribute is no
// error: the directory carries none, and [Layout.Recorded] will not list it.
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

// Recorded returns the ID directories under Root that carry a recorded
// digest ([Layout.RecordDigest]), with their digests: a directory a write
// never finished carries none. It reads only the attribute; whether a
// directory's content still matches it is for [Layout.Verify] to tell.
// held reports whether Root's filesystem holds extended attributes: where
// it does not, no directory carries a digest and Recorded returns none.
// Recorded creates and claims Root as Reset does and refuses the roots
// Reset refuses, removes nothing, and holds Root's shared lock while it
// reads, so no Prune or Reset runs meanwhile. It needs a Codec
// ([ErrNoCodec]).
func (l Layout[ID]) Recorded() (recorded map[ID]Digest, held bool, err error) {
	if l.Codec == nil {
		return nil, false, ErrNoCodec
	}
	h, err := l.openRoot("recorded", true, rootlock.Shared)
	if err != nil {
		return nil, false, err
	}
	defer h.release()
	recorded, held, err = l.recordedDirs(h)
	if err != nil {
		return nil, false, fmt.Errorf("dirlife: recorded: %w", err)
	}
	return recorded, held, nil
}

// recordedDirs returns the ID directories of h that carry a recorded
// digest, and whether h's filesystem holds extended attributes.
func (l Layout[ID]) recordedDirs(h *openRoot) (map[ID]Digest, bool, error) {
	if h.own != byAttr {
		return nil, false, nil // Root's filesystem holds no attribute
	}
	d, err := h.r.Open(".")
	if err != nil {
		return nil, false, err
	}
	entries, err := d.ReadDir(-1)
	d.Close()
	if err != nil {
		return nil, false, err
	}
	dev, err := rootDevice(h, l.devOf())
	if err != nil {
		return nil, false, err
	}
	recorded := map[ID]Digest{}
	for _, e := range entries {
		id, ok := l.parse(e)
		if !ok {
			continue
		}
		dg, ok, err := l.readDigest(h.r, e.Name(), dev)
		if attrUnsupported(err) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		if ok {
			recorded[id] = dg
		}
	}
	return recorded, true, nil
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
// [Layout.Link]). files, when not nil, is the content want is the digest
// of (l.DigestFiles(files), the tree l.Write gives it), and stands for want,
// which is not read: the directory matches when it holds the tree l.Write
// gives files, each file read once and compared with its bytes there
// instead of being hashed, so a match costs a read of the directory and no
// hash (under Link, which is told of the files' hashes, a match hashes
// files). Verify holds Root's shared lock, waiting for a running Prune or
// Reset, so none runs meanwhile; it reads up to GOMAXPROCS files (at most
// 4; one, with files) at once, with bounded memory and descriptors, and
// returns ctx.Err() once ctx ends and every read has stopped. It changes
// nothing but what it tells Link, holding the lock: Found on a match, Gone
// on any other outcome but the end of ctx (under Link it also reads the
// filesystem's clock by setting the directory's times again to what they
// are, see [File]).
func (l Layout[ID]) Verify(ctx context.Context, id ID, want Digest, files Files) error {
	name, err := l.name(id)
	if err != nil {
		return err
	}
	var expect map[string][]byte
	if files != nil {
		p, err := planFiles(files)
		if err != nil {
			return err
		}
		want = l.digestPlan(p, files, false) // the shape alone: files are compared, not hashed
		expect = make(map[string][]byte, len(p.Names))
		for i, n := range p.Names {
			expect[n] = files[p.From[i]]
		}
	}
	h, err := l.openRoot("verify", false, rootlock.Shared)
	if err != nil {
		return err
	}
	if h == nil {
		return &os.PathError{Op: "verify", Path: filepath.Join(l.Root, name), Err: fs.ErrNotExist}
	}
	defer h.release()
	return l.checkDir(ctx, h, name, want, expect)
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
	return l.checkDir(ctx, h, name, want, nil)
}

// checkDir is Verify of the directory name of h, which the caller holds,
// against want; with expect, as Verify with files: each regular file is compared
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
		for i, sum := range tree.SumAll(data, min(runtime.GOMAXPROCS(0), maxHashers)) {
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
	return Digest(w.dg.Sum()), nil
}
