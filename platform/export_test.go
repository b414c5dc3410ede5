package platform

import (
	"context"

	"leasekit.dev/platform/platformmodule"
)

// ReclaimNow runs one step of the reclaim loop: what Run does when woken.
func (p *Publisher) ReclaimNow() []ReclaimEvent {
	var evs []ReclaimEvent
	for _, ev := range p.pub.Reclaim() {
		evs = append(evs, reclaimEvent(ev))
	}
	return evs
}

// DiskWrite is the write step, by directory name.
func (p *Publisher) DiskWrite(name string, files platformmodule.Files) (string, error) {
	return p.disk.Write(name, files)
}

// DiskPrune is the removal step, keeping directories by name.
func (p *Publisher) DiskPrune(keep ...string) error { return p.disk.Prune(keep...) }

// SetWrite replaces the write step, so that tests can make it fail; nil
// restores it.
func (p *Publisher) SetWrite(write func(name string, files platformmodule.Files) (string, error)) {
	p.seamMu.Lock()
	p.write = write
	p.seamMu.Unlock()
}

// SetPrune replaces the removal step, so that tests can make it fail; nil
// restores it.
func (p *Publisher) SetPrune(prune func(keep ...string) error) {
	p.seamMu.Lock()
	p.prune = prune
	p.seamMu.Unlock()
}

// SetSettle replaces the wait for the layout's background removals, so
// that tests can make a removal hang; nil restores it.
func (p *Publisher) SetSettle(settle func(ctx context.Context) error) {
	p.seamMu.Lock()
	p.settle = settle
	p.seamMu.Unlock()
}
