package platform

import "context"

// ReclaimNow runs one step of the reclaim loop: what Run does when woken.
func (p *Publisher) ReclaimNow() []ReclaimEvent {
	_ = p.lock(context.Background())
	reclaims := p.reclaimLocked()
	p.unlock()
	p.finishReclaims(reclaims)
	return reclaims
}

// SetPrune replaces the removal step, so that tests can make it fail.
func (p *Publisher) SetPrune(prune func(keep ...int64) error) {
	_ = p.lock(context.Background())
	p.prune = prune
	p.unlock()
}
