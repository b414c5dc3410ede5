package dirlife

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"

	"leasekit.dev/dirlife/internal/names"
	"leasekit.dev/dirlife/internal/removal"
	"leasekit.dev/dirlife/internal/rootlock"

	"leasekit.dev/dirlife/internal/sys"
	"leasekit.dev/dirlife/internal/tree"
)

// defaultFilePerm and defaultDirPerm are the modes Write gives a file and
// a directory. Like [os.WriteFile], the process's umask applies to them.
const (
	defaultFilePerm fs.FileMode = 0o644
	defaultDirPerm  fs.FileMode = 0o755
)

// Write materialises files as id's directory and returns its path,
// [Layout.Dir](id): [Layout.WriteStream] with a fill that writes files,
// each 0o644 in directories 0o755, subject to the umask as with
// [os.WriteFile]. Every name is checked first ([*NameError], [ErrNoFiles]).
// A Write holds a bounded number of descriptors whatever its tree's depth
// and width (a few dozen), and hashes each file as it writes it.
//
// On failure id's directory is as WriteStream leaves it; with the errors
// of a published directory, the path is returned too. A non-empty Root no
// layout claimed is refused with [ErrNotOwned].
func (l Layout[ID]) Write(id ID, files Files) (string, error) {
	if _, err := l.name(id); err != nil {
		return "", err
	}
	p, err := planFiles(files)
	if err != nil {
		return "", l.writeErr(id, err)
	}
	w, err := l.stream(context.Background(), id, l.fillFiles(p, files), StreamOptions{})
	if err != nil && !w.Published {
		return "", err
	}
	return w.Dir, err
}

// planFiles validates every name in files before anything is written.
func planFiles(files Files) (*names.Plan, error) {
	if len(files) == 0 {
		return nil, ErrNoFiles
	}
	given := make([]string, 0, len(files))
	for name := range files {
		given = append(given, name)
	}
	return names.PlanNames(given)
}

// fillFiles returns the fill of a Write: the files of the validated plan
// p, in sorted order, every directory made before what it holds. Each
// directory is opened by a tree.Cursor from its nearest open ancestor while
// its entries are made, and closed once they are, which bounds the
// descriptors (see maxWriteFDs). It reports each file's size and SHA-256,
// which spares the check reading them back, and, under syncFiles, that it
// synced them, on the file pool's workers.
func (l Layout[ID]) fillFiles(p *names.Plan, files Files) filler {
	return func(ctx context.Context, sr *os.Root, stage string, k *linker) (filled, error) {
		out := filled{sums: make(map[string]fileSum, len(p.Names)), counted: true}
		cur := tree.NewCursor(sr)
		pool := l.newFilePool(stage, k.filePerm)
		err := l.fill(ctx, cur, pool, k, p, files, &out)
		cur.Close()
		if perr := pool.stop(); err == nil {
			err = perr
		}
		out.synced = pool.syncs()
		return out, err
	}
}

// fill creates the directories and files of p in the staging tree, in
// sorted order, so that every directory is made before what it holds. A
// file k links is not written.
func (l Layout[ID]) fill(ctx context.Context, cur *tree.Cursor, pool *filePool, k *linker, p *names.Plan, files Files, out *filled) error {
	stage := k.stage
	di, fi := 0, 0
	for di < len(p.Dirs) || fi < len(p.Names) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if di < len(p.Dirs) && (fi == len(p.Names) || p.Dirs[di] < p.Names[fi]) {
			d := p.Dirs[di]
			di++
			h, err := cur.At(path.Dir(d))
			if err != nil {
				return err
			}
			err = l.mkdirIn(h.Root(), path.Base(d), path.Join(stage, d))
			h.Release()
			if err != nil {
				return err
			}
			continue
		}
		name := p.Names[fi]
		data := files[p.From[fi]]
		fi++
		s := fileSum{size: int64(len(data)), sum: sha256.Sum256(data)}
		s.linked = k.link(name, s, k.filePerm, data, false)
		out.sums[name] = s
		if s.linked {
			continue
		}
		out.wrote += s.size
		h, err := cur.At(path.Dir(name))
		if err != nil {
			return err
		}
		pool.add(fileJob{h, path.Base(name), path.Join(stage, name), data}) // releases h
		if pool.failed() {
			return nil // stop reports it
		}
	}
	return nil
}

// A publishedError is the error of a write that published its directory:
// a failed sync after the rename, or a removal of the replaced copy that
// failed or is still running at the deadline.
type publishedError struct{ err error }

func (e *publishedError) Error() string { return e.err.Error() }
func (e *publishedError) Unwrap() error { return e.err }

func (l Layout[ID]) writeErr(id ID, err error) error {
	var ne *NameError
	var nd *notDurableError
	if errors.As(err, &ne) || errors.As(err, &nd) {
		return err // names the file or directory already
	}
	return fmt.Errorf("dirlife: write %s: %w", l.Dir(id), err)
}

// A stager fills the fresh staging directory stage (root-relative, in h,
// which the caller holds shared) and, unless NoSync, makes it durable. It
// reports whether the staged tree is to be published: false discards it.
type stager func(h *openRoot, stage string) (publish bool, err error)

// write fills a fresh staging directory with fill and publishes it as
// name, unless fill reports otherwise, and then calls onPublish, under
// the lock. It reports whether it published; an error after the
// publication is a *publishedError. A staging
// directory that is not published is discarded, also when fill panics or
// exits its goroutine.
func (l Layout[ID]) write(name string, fill stager, onPublish func()) (published bool, err error) {
	h, err := l.openRoot("write", true, rootlock.Shared)
	if err != nil {
		return false, err
	}
	defer h.close()
	defer h.unlock()
	r, dir := h.r, h.dir

	stage := names.TempName(stagePrefix)
	if err := l.mkdir(r, stage); err != nil {
		return false, err
	}
	var old string // the replaced copy, once published
	defer func() {
		// Set aside under the lock, removed once it is let go.
		var stranded *strandedError
		discard, was := old, name
		if old != "" && l.fault(stepRemove, old) != nil {
			discard = "" // left to the next Prune
		}
		if !published {
			discard, was = "", stage
			if !errors.As(err, &stranded) && l.fault(stepRemove, stage) == nil {
				discard = stage // else Prune or Reset removes it
			}
		}
		if discard == "" {
			return
		}
		if rerr := l.discard(h, discard, was); rerr != nil && published {
			err = &publishedError{errors.Join(err, rerr)}
		}
	}()
	if publish, err := fill(h, stage); err != nil || !publish {
		return false, err
	}
	old, err = l.publish(r, dir, stage, name)
	if err != nil {
		return false, err
	}
	published = true
	onPublish()
	if !l.NoSync {
		// Never undone on failure: another Write of name may have published
		// since, and the state after a failed sync is unknown anyway.
		if serr := l.syncRoot(dir); serr != nil {
			return true, &publishedError{&notDurableError{Dir: filepath.Join(l.Root, name), Err: serr}}
		}
	}
	return true, nil
}

// discard removes the entry name of h's root, once named was, which the
// caller holds shared: the copy a rewrite replaced or the staging tree of
// a failed Write. Under the lock it renames it to a fresh aside name, which
// no ID or staging directory can take; it lets the lock go, and removes
// it, waiting for it unless DeferRemoval. An entry it cannot set aside is
// left to the next Prune, as is what a failed removal leaves.
func (l Layout[ID]) discard(h *openRoot, name, was string) error {
	aside := name
	if !names.IsPlainAside(name) {
		aside = names.TempName(asidePrefix)
		if err := h.r.Rename(name, aside); err != nil {
			return nil // the next Prune removes it
		}
	}
	st := h.lock.St
	st.Retain()
	defer rootlock.Put(st)
	batch, err := l.removeGarbage(st, h, []removal.Garbage{{Name: aside, Was: was}}, l.DeferRemoval)
	h.unlock()
	if err != nil || l.DeferRemoval {
		return err
	}
	return l.wait(context.Background(), st, batch, removal.CollectOwn)
}

// syncStaged syncs directory d of the staging tree.
func (l Layout[ID]) syncStaged(cur *tree.Cursor, stage, d string) error {
	name := path.Join(stage, d)
	if err := l.fault(stepSyncDir, name); err != nil {
		return &os.PathError{Op: "sync", Path: name, Err: err}
	}
	h, err := cur.At(d)
	if err != nil {
		return err
	}
	defer h.Release()
	return syncDir(h.Root(), ".")
}

// mkdirIn makes directory base in parent; name is its root-relative name,
// for errors and the fault seam.
func (l Layout[ID]) mkdirIn(parent *os.Root, base, name string) error {
	if err := l.fault(stepMkdir, name); err != nil {
		return &os.PathError{Op: "mkdir", Path: name, Err: err}
	}
	return parent.Mkdir(base, 0o755)
}

func (l Layout[ID]) mkdir(r *os.Root, name string) error {
	return l.mkdirIn(r, name, name)
}

func (l Layout[ID]) syncDir(r *os.Root, name string) error {
	if err := l.fault(stepSyncDir, name); err != nil {
		return &os.PathError{Op: "sync", Path: name, Err: err}
	}
	return syncDir(r, name)
}

// syncRoot syncs Root after a publication.
func (l Layout[ID]) syncRoot(dir *os.File) error {
	if err := l.fault(stepSyncRoot, "."); err != nil {
		return &os.PathError{Op: "sync", Path: ".", Err: err}
	}
	return sys.SyncDir(dir)
}

func syncDir(r *os.Root, name string) error {
	d, err := r.Open(name)
	if err != nil {
		return err
	}
	err = sys.SyncDir(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
