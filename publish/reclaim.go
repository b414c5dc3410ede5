package publish

import (
	"cmp"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"time"
)

// Run is the reclaim loop: it removes a replaced or forgotten record's
// directory soon after its last lease is released, woken by the release
// itself (no polling), until ctx ends; then it returns nil and leaves no
// goroutine behind. A failed removal is retried after a wait that doubles
// from RetryMin up to RetryMax. Every removal runs under the Publisher's
// serialisation and re-checks, right before removing, that the directory
// is neither current nor leased. Run returns [ErrNotBooted] before Boot
// has succeeded.
//
// While Run runs, Publish hands it the removal of the directory it
// replaced, so that a publish's latency excludes garbage removal. Without
// Run, Publish and Forget remove before they return, so the disk never
// grows without bound; Run makes the removal after a release prompt.
func (p *Publisher[K, A, V]) Run(ctx context.Context) error {
	p.made()
	if !p.booted.Load() {
		return ErrNotBooted
	}
	p.running.Add(1)
	defer p.running.Add(-1)
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	backoff := time.Duration(0)
	var woke time.Time // when a release woke the loop; zero otherwise
	for {
		freed := p.slot.Freed() // before reclaiming: no release is missed
		if err := p.lock(ctx); err != nil {
			return nil
		}
		if !woke.IsZero() {
			p.freedAt = woke
		}
		reclaims := p.reclaimLocked()
		p.unlock()
		if !failed(reclaims) {
			reclaims = append(reclaims, p.settle(ctx)...)
		}
		p.finishReclaims(reclaims)

		woke = time.Time{}
		if failed(reclaims) {
			backoff = min(max(2*backoff, p.retryMin), p.retryMax)
			timer.Reset(backoff)
			select {
			case <-ctx.Done():
				return nil
			case <-timer.C:
			}
			continue
		}
		backoff = 0
		select {
		case <-ctx.Done():
			return nil
		case <-freed:
			woke = time.Now()
		case <-p.poke:
		}
	}
}

// Reclaim runs one pass of the reclaim loop now, for a caller that does
// not run Run: it removes every directory that is neither current nor
// leased and reports each removal it tried. It waits for a running Publish
// to finish.
func (p *Publisher[K, A, V]) Reclaim() []ReclaimEvent[K] {
	p.made()
	if !p.booted.Load() {
		return nil
	}
	_ = p.lock(context.Background())
	reclaims := p.reclaimLocked()
	p.unlock()
	p.finishReclaims(reclaims)
	return reclaims
}

// settle waits for the removals the layout runs in the background and
// reports one that failed, marking Root dirty so that the next pass
// retries what it left. It runs without the serialisation, so a Publish
// never waits for it.
func (p *Publisher[K, A, V]) settle(ctx context.Context) []ReclaimEvent[K] {
	err := p.layout.Settle()
	if err == nil {
		return nil
	}
	if p.lock(ctx) == nil {
		p.dirty = true
		p.unlock()
	}
	return []ReclaimEvent[K]{{Err: err}}
}

func failed[K cmp.Ordered](reclaims []ReclaimEvent[K]) bool {
	return slices.ContainsFunc(reclaims, func(ev ReclaimEvent[K]) bool { return ev.Err != nil })
}

// keepNames returns the names of the directories that must stay: the
// current record's and every leased record's. The caller holds the
// serialisation, so nothing becomes current meanwhile, and a lease taken
// after this can only be on the current record.
func (p *Publisher[K, A, V]) keepNames() []string {
	var keep []string
	if _, cur, ok := p.slot.Get(); ok {
		keep = append(keep, filepath.Base(cur.Dir))
	}
	for _, lv := range p.slot.LeasedValues() {
		name := filepath.Base(lv.Value.Dir)
		if !lv.Current {
			if d := p.dirs[name]; d != nil {
				d.leased = true
			}
		}
		if !slices.Contains(keep, name) {
			keep = append(keep, name)
		}
	}
	return keep
}

// doomed returns the keep set and the known directories outside it.
func (p *Publisher[K, A, V]) doomed() (keep, doomed []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	keep = p.keepNames()
	for name := range p.dirs {
		if !slices.Contains(keep, name) {
			doomed = append(doomed, name)
		}
	}
	slices.Sort(doomed)
	return keep, doomed
}

// reclaimLocked removes every entry under Root but the current and the
// leased records' directories, and reports each known directory it tried
// to remove. The caller holds the serialisation.
func (p *Publisher[K, A, V]) reclaimLocked() []ReclaimEvent[K] {
	keep, doomed := p.doomed()
	if len(doomed) == 0 && !p.dirty {
		return nil // nothing to remove: no need to lock Root
	}
	pruneErr := p.disk.Prune(keep...)
	p.dirty = pruneErr != nil
	after, err := p.layout.IDs()
	if err != nil {
		p.dirty = true
		return []ReclaimEvent[K]{{Err: errors.Join(pruneErr, err)}}
	}
	if len(doomed) == 0 {
		if pruneErr != nil {
			return []ReclaimEvent[K]{{Err: pruneErr}}
		}
		p.clearReclaimErr()
		return nil
	}
	now := time.Now()
	events := make([]ReclaimEvent[K], 0, len(doomed)+1)
	reported := false
	p.mu.Lock()
	for _, name := range doomed {
		d := p.dirs[name]
		ev := ReclaimEvent[K]{Identity: d.id, Dir: p.layout.Dir(name)}
		if _, found := slices.BinarySearch(after, name); found {
			if pruneErr == nil {
				pruneErr = errors.New("publish: directory still present after prune")
				p.dirty = true
			}
			ev.Err = pruneErr
			reported = true
			events = append(events, ev)
			continue
		}
		delete(p.dirs, name)
		if since := d.superseded; !since.IsZero() {
			if d.leased && p.freedAt.After(since) {
				since = p.freedAt
			}
			ev.Delay = max(now.Sub(since), 0)
		}
		events = append(events, ev)
	}
	// A known directory that went by other means is forgotten too.
	for name := range p.dirs {
		if _, found := slices.BinarySearch(after, name); !found && !slices.Contains(keep, name) {
			delete(p.dirs, name)
		}
	}
	p.mu.Unlock()
	if pruneErr != nil && !reported {
		// Every doomed directory went; something else would not.
		events = append(events, ReclaimEvent[K]{Err: pruneErr})
	}
	return events
}

func (p *Publisher[K, A, V]) clearReclaimErr() {
	p.statsMu.Lock()
	p.stats.LastError = nil // the retry of a failed removal succeeded
	p.reclaimErr = nil
	p.statsMu.Unlock()
}

// pruneAfterSet removes after a successful set or, when the reclaim loop
// runs and has not fallen behind (at most the directory just replaced
// awaits removal), hands the removal to it. The caller holds the
// serialisation.
func (p *Publisher[K, A, V]) pruneAfterSet() []ReclaimEvent[K] {
	if p.running.Load() > 0 && !p.dirty {
		if _, doomed := p.doomed(); len(doomed) <= 1 {
			if len(doomed) == 1 {
				p.wakeReclaim()
			}
			return nil
		}
	}
	return p.reclaimLocked()
}

// wakeReclaim asks the reclaim loop for a pass.
func (p *Publisher[K, A, V]) wakeReclaim() {
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// wakeToSettle asks the reclaim loop for a pass after a Publish or Forget
// removed a directory itself, so that the loop waits for the tree's
// background removal and retries it if it fails there.
func (p *Publisher[K, A, V]) wakeToSettle(reclaims []ReclaimEvent[K]) {
	if p.running.Load() > 0 && slices.ContainsFunc(reclaims, func(ev ReclaimEvent[K]) bool { return ev.Err == nil }) {
		p.wakeReclaim()
	}
}

// finishReclaims records reclaims in the stats, logs them and calls
// OnReclaim for each. It runs after the serialisation is released. A
// failure pokes the reclaim loop to retry.
func (p *Publisher[K, A, V]) finishReclaims(reclaims []ReclaimEvent[K]) {
	if len(reclaims) == 0 {
		return
	}
	p.statsMu.Lock()
	var lastErr error
	for _, ev := range reclaims {
		if ev.Err != nil {
			lastErr = ev.Err
			continue
		}
		p.stats.Reclaims++
		p.stats.ReclaimDelay = ev.Delay
	}
	// A removal beside a failed one does not hide the failure.
	p.reclaimErr = lastErr
	p.stats.LastError = lastErr
	p.statsMu.Unlock()
	for _, ev := range reclaims {
		if ev.Err != nil {
			p.log.Error("publish: removing a directory", "dir", ev.Dir, "err", ev.Err)
			p.wakeReclaim()
		} else {
			p.log.Debug("publish: removed a directory", "dir", ev.Dir, "identity", ev.Identity.String(), "delay", ev.Delay)
		}
		if p.onReclaim != nil {
			p.onReclaim(ev)
		}
	}
}

// Forget drops the current record, for a deleted resource: the slot holds
// nothing afterwards, and the directory is removed once its last lease is
// released (at once when it has none). Like Publish, it removes every
// other directory that is neither current nor leased. Forget waits for a
// running Publish to finish.
func (p *Publisher[K, A, V]) Forget() {
	p.made()
	_ = p.lock(context.Background())
	_, cur, held := p.slot.Get()
	p.slot.Clear()
	p.curDir, p.curFP = "", fingerprint{}
	var reclaims []ReclaimEvent[K]
	if held {
		p.mu.Lock()
		if d := p.dirs[filepath.Base(cur.Dir)]; d != nil {
			d.superseded = time.Now()
		}
		p.mu.Unlock()
	}
	if p.booted.Load() {
		reclaims = p.reclaimLocked()
	}
	p.unlock()
	if held {
		p.log.Info("publish: forgot", "key", cur.Key, "identity", cur.Identity().String())
	}
	p.finishReclaims(reclaims)
	p.wakeToSettle(reclaims)
}
