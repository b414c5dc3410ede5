package publish

import "context"

// ReclaimNow runs one pass of the reclaim loop: what Run does when woken.
func (p *Publisher[K, A, V]) ReclaimNow() []ReclaimEvent[K] {
	_ = p.lock(context.Background())
	reclaims := p.reclaimLocked()
	p.unlock()
	p.finishReclaims(reclaims)
	return reclaims
}
