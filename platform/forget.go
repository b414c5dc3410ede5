package platform

import (
	"context"
	"time"
)

// Forget drops the current record, for a deleted Platform resource: the
// store holds nothing afterwards, and the directory is removed once its
// last lease is released (at once when it has none). Like Publish, it
// removes every other directory that is neither current nor leased; their
// space is freed in the background right after it returns, as Publish's.
// Forget waits for a running Publish to finish, never for a removal.
func (p *Publisher) Forget() {
	_ = p.lock(context.Background())
	cur, held := p.store.Generated()
	p.store.Clear()
	p.files = nil
	var reclaims []ReclaimEvent
	if held {
		p.superseded[cur.Generation] = time.Now()
	}
	if p.booted.Load() {
		reclaims = p.reclaimLocked()
	}
	p.unlock()
	if held {
		p.log.Info("platform: forgot", "generation", cur.Generation)
	}
	p.finishReclaims(reclaims)
	p.wakeToSettle(reclaims)
}
