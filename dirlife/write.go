package dirlife

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// Write materialises files as id's directory and returns its path,
// [Layout.Dir](id).
//
// Every name is validated before anything is written (see [NameError]).
// The files are written into a staging directory beside the target and
// renamed into place, so no reader ever observes a partial directory, also
// if the process is killed at any instant. When id's directory exists
// already, the new one is swapped in atomically, so the path never goes
// missing (but see the package limits), and the old one, out of the path
// under an aside name, is removed once Root's lock is let go: its space
// is free when Write returns (with [Layout.DeferRemoval], its removal goes
// on in the background). Unless [Layout.NoSync] is set, the directory
// survives power loss once Write returns: files and staging directories
// are synced before the rename and Root after it.
//
// If that sync of Root fails, the directory is published all the same and
// stays: Write returns its path and a [*NotDurableError] (errors.Is
// [ErrNotDurable]). A publication is never undone. So does a removal of the
// old copy that fails, or that runs past [Layout.RemovalDeadline] (a
// [*StalledError]): Write returns the path and that error, and the next
// Prune removes what is left. On any other failure
// Write returns an error and leaves id's directory exactly as it was,
// absent or complete with its old contents (or as another Write left it),
// but for one double fault: where a rewrite without an atomic exchange can
// neither rename the new directory into place nor move the old one back,
// the old one stays moved aside, intact, until the next Prune that keeps id
// restores it (see the package limits);
// a staging directory left behind by a failure it could not clean up is
// removed by the next Prune or Reset. Root is created when missing, and
// claimed when empty; a non-empty Root that no layout ever claimed is
// refused with [ErrNotOwned].
//
// Write holds a bounded number of descriptors (a few dozen), whatever the
// depth and width of the tree. It holds Root's lock shared: Writes run
// alongside one another, and a Prune or Reset waits for them. Concurrent Writes of one ID each publish a
// complete directory; the last to publish wins.
func (l Layout[ID]) Write(id ID, files Files) (string, error) {
	name, err := l.name(id)
	if err != nil {
		return "", err
	}
	p, err := planFiles(files)
	if err != nil {
		return "", l.writeErr(id, err)
	}
	return l.writePlan(id, name, p, func(i int) File { return File{Data: files[p.from[i]]} })
}

// writePlan writes the validated plan p as id's directory, name.
func (l Layout[ID]) writePlan(id ID, name string, p *plan, entry func(int) File) (string, error) {
	stage := func(r *os.Root, dir *os.File, stage string) (bool, error) {
		return true, l.stage(r, dir, stage, p, entry)
	}
	if _, err := l.write(name, stage); err != nil {
		var pe *publishedError
		if errors.As(err, &pe) {
			return l.Dir(id), pe.err
		}
		return "", l.writeErr(id, err)
	}
	return l.Dir(id), nil
}

// A publishedError is the error of a Write that published its directory:
// a failed sync after the rename, or a removal of the replaced copy that
// failed or is still running at the deadline.
type publishedError struct{ err error }

func (e *publishedError) Error() string { return e.err.Error() }
func (e *publishedError) Unwrap() error { return e.err }

// WriteFS is [Layout.Write] with the regular files of fsys (an [embed.FS],
// an [os.DirFS] tree) as its files, under the same rules. Empty directories
// of fsys are not reproduced; a symbolic link or other irregular file in
// fsys is refused with a [NameError], and nothing is written. WriteFS
// reads the whole tree into memory first; [Layout.CopyFS] streams it, and
// keeps its modes and links.
func (l Layout[ID]) WriteFS(id ID, fsys fs.FS) (string, error) {
	if _, err := l.name(id); err != nil {
		return "", err
	}
	files := Files{}
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return &NameError{name, fmt.Sprintf("is not a regular file (%v)", d.Type())}
		}
		data, err := fs.ReadFile(fsys, name)
		files[name] = data
		return err
	})
	if err != nil {
		return "", l.writeErr(id, err)
	}
	return l.Write(id, files)
}

func (l Layout[ID]) writeErr(id ID, err error) error {
	var ne *NameError
	var nd *NotDurableError
	if errors.As(err, &ne) || errors.As(err, &nd) {
		return err // names the file or directory already
	}
	return fmt.Errorf("dirlife: write %s: %w", l.Dir(id), err)
}

// A stager fills the fresh staging directory stage (root-relative, in r;
// dir is the root's directory) and, unless NoSync, makes it durable. It
// reports whether the staged tree is to be published: false discards it.
type stager func(r *os.Root, dir *os.File, stage string) (publish bool, err error)

// write fills a fresh staging directory with fill and publishes it as
// name, unless fill reports otherwise. It reports whether it published;
// an error after the publication is a *publishedError. A staging
// directory that is not published is discarded, also when fill panics or
// exits its goroutine.
func (l Layout[ID]) write(name string, fill stager) (published bool, err error) {
	h, err := l.openRoot("write", true, shared)
	if err != nil {
		return false, err
	}
	defer h.close()
	defer h.unlock()
	r, dir := h.r, h.dir

	stage := tempName(stagePrefix)
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
	if publish, err := fill(r, dir, stage); err != nil || !publish {
		return false, err
	}
	old, err = l.publish(r, dir, stage, name)
	if err != nil {
		return false, err
	}
	published = true
	if !l.NoSync {
		// Never undone on failure: another Write of name may have published
		// since, and the state after a failed sync is unknown anyway.
		if serr := l.syncRoot(dir); serr != nil {
			return true, &publishedError{&NotDurableError{Dir: filepath.Join(l.Root, name), Err: serr}}
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
	if !isPlainAside(name) {
		aside = tempName(asidePrefix)
		if err := h.r.Rename(name, aside); err != nil {
			return nil // the next Prune removes it
		}
	}
	st := h.lock.st
	st.retain()
	defer putState(st)
	batch, err := l.removeGarbage(st, h, []garbage{{name: aside, was: was}}, l.DeferRemoval)
	h.unlock()
	if err != nil || l.DeferRemoval {
		return err
	}
	return l.wait(context.Background(), st, batch, collectOwn)
}

// stage fills the staging directory and, unless NoSync, makes it durable.
//
// It holds a bounded number of descriptors whatever the tree's shape (see
// maxWriteFDs): directories are opened by a dirCursor, from their nearest
// open ancestor, and closed once the cursor has moved on and their files
// are written.
func (l Layout[ID]) stage(r *os.Root, dir *os.File, stage string, p *plan, entry func(int) File) error {
	// Each file and directory is created by a single-element openat or
	// mkdirat in its own directory: the staging tree is the layout's own
	// fresh directory, opened as a Root of its own so nothing in it can
	// lead outside.
	sr, err := r.OpenRoot(stage)
	if err != nil {
		return err
	}
	defer sr.Close()
	cur := newDirCursor(sr)
	files := l.newFilePool(dir, stage)
	err = l.fill(cur, files, stage, p, entry)
	cur.close()
	if err != nil {
		files.stop()
		return err
	}
	if err := files.stop(); err != nil {
		return err
	}
	if err := checkLinks(sr, p); err != nil {
		return err
	}
	if err := files.wait(); err != nil {
		return err
	}
	if l.NoSync || files.syncedAll {
		return nil
	}
	// Directories after their files, deepest first, the staging directory
	// last: each entry is durable before the directory that names it.
	// Reverse sorted order puts every directory before its parent.
	cur = newDirCursor(sr)
	defer cur.close()
	for i := len(p.dirs) - 1; i >= 0; i-- {
		if err := l.syncStaged(cur, stage, p.dirs[i]); err != nil {
			return err
		}
	}
	return l.syncDir(r, stage)
}

// fill creates the directories and files of p in the staging tree, in
// sorted order, so that every directory is made before what it holds.
func (l Layout[ID]) fill(cur *dirCursor, files *filePool, stage string, p *plan, entry func(int) File) error {
	di, fi := 0, 0
	for di < len(p.dirs) || fi < len(p.names) {
		if di < len(p.dirs) && (fi == len(p.names) || p.dirs[di] < p.names[fi]) {
			d := p.dirs[di]
			di++
			h, err := cur.at(path.Dir(d))
			if err != nil {
				return err
			}
			err = l.mkdirIn(h.dir(), path.Base(d), path.Join(stage, d))
			h.release()
			if err != nil {
				return err
			}
			continue
		}
		name := p.names[fi]
		h, err := cur.at(path.Dir(name))
		if err != nil {
			return err
		}
		files.add(fileJob{h, path.Base(name), path.Join(stage, name), entry(fi)}) // releases h
		fi++
		if files.failed() {
			return nil // wait reports it
		}
	}
	return nil
}

// syncStaged syncs directory d of the staging tree.
func (l Layout[ID]) syncStaged(cur *dirCursor, stage, d string) error {
	name := path.Join(stage, d)
	if err := l.fault(stepSyncDir, name); err != nil {
		return &os.PathError{Op: "sync", Path: name, Err: err}
	}
	h, err := cur.at(d)
	if err != nil {
		return err
	}
	defer h.release()
	return syncDir(h.dir(), ".")
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
	return syncDirFile(dir)
}

func syncDir(r *os.Root, name string) error {
	d, err := r.Open(name)
	if err != nil {
		return err
	}
	err = syncDirFile(d)
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
