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
