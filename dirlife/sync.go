package dirlife

import (
	"io/fs"
	"os"
	"sync"

	"leasekit.dev/dirlife/internal/sys"
	"leasekit.dev/dirlife/internal/tree"
)

// A syncMode says how a durable Write makes its staging tree durable.
type syncMode int

const (
	// syncFS closes the files unsynced and calls syncfs(2) once on the
	// root's filesystem: one journal commit for the whole tree, at the
	// price of also flushing whatever else is dirty on that filesystem.
	// The default where the system has syncfs.
	syncFS syncMode = iota
	// syncFiles fsyncs every file as it is written, several at once, then
	// every staging directory, deepest first. Layout.PerFileSync.
	syncFiles
)

// syncWorkers bounds the files a Write fsyncs at once under syncFiles:
// concurrent fsyncs on one filesystem share journal commits. Otherwise the
// files are written in turn by the calling goroutine: more writers gained
// nothing measurable.
const syncWorkers = 8

// maxWriteFDs is the most descriptors one Write holds open at once: the
// cursor's (each file in flight in the pool may keep its own directory
// open besides) directories, under syncFiles one directory and one file per
// worker and one more directory queued, a directory being synced or
// created in, the staging root, the root's own descriptors (the root, its
// lock, the directory used to sync it) and slack for the runtime's os.Root
// walks, which open and close one directory at a time.
const maxWriteFDs = tree.MaxCursorDirs + 2*syncWorkers + 1 + 8

// A filePool creates, writes, syncs (under syncFiles) and closes the files
// of one staging tree: in turn, or under syncFiles on workers of its own.
type filePool struct {
	fault  faultFunc
	mode   syncMode
	noSync bool
	stage  string
	perm   fs.FileMode // each file is created with
	jobs   chan fileJob
	wg     sync.WaitGroup

	mu  sync.Mutex
	err error // the first failure; later jobs are skipped
}

type fileJob struct {
	dir  *tree.Dir // the file's directory in the staging tree, released once the file is done
	base string    // the file's name in dir
	name string    // its root-relative name, for errors and the fault seam
	data []byte    // its content
}

func (l Layout[ID]) newFilePool(stage string, perm fs.FileMode) *filePool {
	return &filePool{fault: l.fault, mode: l.syncMode(), noSync: l.NoSync, stage: stage, perm: perm}
}

// syncMode returns how a durable write of l makes its staging tree durable.
func (l Layout[ID]) syncMode() syncMode {
	if l.PerFileSync || !sys.HaveSyncfs {
		return syncFiles
	}
	return syncFS
}

// syncs reports whether the pool syncs each file it writes.
func (p *filePool) syncs() bool { return !p.noSync && p.mode == syncFiles }

// add writes one file, or under syncFiles queues it for a worker,
// blocking while every worker is busy. It releases j.dir when the file is
// done.
func (p *filePool) add(j fileJob) {
	if !p.syncs() {
		if !p.failed() {
			p.record(p.writeFile(j))
		}
		j.dir.Release()
		return
	}
	if p.jobs == nil {
		p.jobs = make(chan fileJob)
		for range syncWorkers {
			p.wg.Add(1)
			go p.work()
		}
	}
	p.jobs <- j
}

func (p *filePool) work() {
	defer p.wg.Done()
	for j := range p.jobs {
		if !p.failed() {
			p.record(p.writeFile(j))
		}
		j.dir.Release()
	}
}

func (p *filePool) writeFile(j fileJob) error {
	if err := p.fault(stepCreate, j.name); err != nil {
		return &os.PathError{Op: "create", Path: j.name, Err: err}
	}
	f, err := j.dir.Root().OpenFile(j.base, os.O_WRONLY|os.O_CREATE|os.O_EXCL, p.perm)
	if err != nil {
		return err
	}
	if err = p.fault(stepWrite, j.name); err != nil {
		err = &os.PathError{Op: "write", Path: j.name, Err: err}
	} else {
		_, err = f.Write(j.data)
	}
	if err == nil && p.syncs() {
		if err = p.fault(stepSync, j.name); err != nil {
			err = &os.PathError{Op: "sync", Path: j.name, Err: err}
		} else {
			err = f.Sync()
		}
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (p *filePool) failed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err != nil
}

func (p *filePool) record(err error) {
	if err == nil {
		return
	}
	p.mu.Lock()
	if p.err == nil {
		p.err = err
	}
	p.mu.Unlock()
}

// stop waits until every queued file is done, and returns the first
// failure.
func (p *filePool) stop() error {
	if p.jobs != nil {
		close(p.jobs)
		p.wg.Wait()
		p.jobs = nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}
