package dirlife

import (
	"io/fs"
	"os"
	"sync"
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

// A filePool creates, writes, syncs (under syncFiles) and closes the files
// of one staging tree: in turn, or under syncFiles on workers of its own.
type filePool struct {
	fault  faultFunc
	dir    *os.File // the root, for syncfs
	mode   syncMode
	noSync bool
	stage  string
	jobs   chan fileJob
	wg     sync.WaitGroup

	mu  sync.Mutex
	err error // the first failure; later jobs are skipped

	// syncedAll reports, after wait, that the whole staging tree,
	// directories included, is durable.
	syncedAll bool
}

type fileJob struct {
	dir  *dirHandle // the file's directory in the staging tree, released once the file is done
	base string     // the file's name in dir
	name string     // its root-relative name, for errors and the fault seam
	file File       // its content and mode, or its link target
}

func (l Layout[ID]) newFilePool(dir *os.File, stage string) *filePool {
	mode := syncFS
	if l.PerFileSync || !haveSyncfs {
		mode = syncFiles
	}
	return &filePool{fault: l.fault, dir: dir, mode: mode, noSync: l.NoSync, stage: stage}
}

// add writes one file, or under syncFiles queues it for a worker,
// blocking while every worker is busy. It releases j.dir when the file is
// done.
func (p *filePool) add(j fileJob) {
	if p.noSync || p.mode != syncFiles {
		if !p.failed() {
			p.record(p.writeFile(j))
		}
		j.dir.release()
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
		j.dir.release()
	}
}

func (p *filePool) writeFile(j fileJob) error {
	if err := p.fault(stepCreate, j.name); err != nil {
		return &os.PathError{Op: "create", Path: j.name, Err: err}
	}
	if j.file.Mode&fs.ModeSymlink != 0 {
		return j.dir.dir().Symlink(string(j.file.Data), j.base) // made durable by its directory's sync
	}
	perm := j.file.perm()
	f, err := j.dir.dir().OpenFile(j.base, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if j.file.Mode != 0 {
		err = f.Chmod(perm) // exactly, whatever the umask
	}
	if err == nil {
		err = p.fault(stepWrite, j.name)
		if err != nil {
			err = &os.PathError{Op: "write", Path: j.name, Err: err}
		} else {
			_, err = f.Write(j.file.Data)
		}
	}
	if err == nil && !p.noSync && p.mode == syncFiles {
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

// wait waits until every queued file is done and returns the first
// failure. Under syncFS it then syncs the filesystem.
func (p *filePool) wait() error {
	err := p.stop()
	if err != nil || p.noSync || p.mode != syncFS {
		return err
	}
	if err := p.fault(stepSync, p.stage); err != nil {
		return &os.PathError{Op: "syncfs", Path: p.stage, Err: err}
	}
	if err := syncfs(p.dir); err != nil {
		return &os.PathError{Op: "syncfs", Path: p.stage, Err: err}
	}
	p.syncedAll = true
	return nil
}
