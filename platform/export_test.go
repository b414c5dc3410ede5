package platform

import (
	"context"

	"leasekit.dev/platform/platformmodule"
)

// ReclaimNow runs one step of the reclaim loop: what Run does when woken.
func (p *Publisher) ReclaimNow() []ReclaimEvent {
	_ = p.lock(context.Background())
	reclaims := p.reclaimLocked()
	p.unlock()
	p.finishReclaims(reclaims)
	return reclaims
}

// SetWrite replaces the write step, so that tests can make it fail.
func (p *Publisher) SetWrite(write func(generation int64, files platformmodule.Files) (string, error)) {
	_ = p.lock(context.Background())
	p.write = write
	p.unlock()
}

// SetPrune replaces the removal step, so that tests can make it fail.
func (p *Publisher) SetPrune(prune func(keep ...int64) error) {
	_ = p.lock(context.Background())
	p.prune = prune
	p.unlock()
}

// SetSettle replaces the wait for the layout's background removals, so
// that tests can make a removal hang.
func (p *Publisher) SetSettle(settle func(ctx context.Context) error) {
	_ = p.lock(context.Background())
	p.settleDisk = settle
	p.unlock()
}
