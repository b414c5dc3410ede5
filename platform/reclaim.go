package platform

import (
	"context"
	"errors"
	"slices"
	"time"

	"leasekit.dev/dirlife"
)

// Run is the reclaim loop: it removes a superseded or forgotten
// generation's directory soon after its last lease is released, woken by
// the release itself (no polling), until ctx ends; then it returns nil at
// once, without waiting for a removal under way. After each pass it waits,
// without the Publisher's serialisation, for the removals the layout runs
// in the background, so that one that failed, or that runs past
// RemovalDeadline (a stuck mount), is reported (Stats, OnReclaim) and
// retried, after a wait that doubles from RetryMin up to RetryMax; a
// removal that is stuck is never started twice, and keeps its goroutine
// (one blocked in a system call, an OS thread) until it returns, after
// Run has. Every prune runs under the Publisher's serialisation and
// re-checks that the directory is neither current nor leased. Run returns
// [ErrNotBooted] before Boot has succeeded.
//
// While Run runs, Publish hands it the pruning of the generation it
// superseded; Root then holds the superseded directory until Run's next
// pass, which the publish wakes at once. A Publish that finds more than
// that awaiting removal prunes itself, so directories never pile up.
// Without Run, Publish and Forget prune themselves, and the removals go on
// in the background; a failure of one is reported by the next prune.
func (p *Publisher) Run(ctx context.Context) error {
	if !p.booted.Load() {
		return ErrNotBooted
	}
	defer p.store.watch()()
	p.running.Add(1)
	defer p.running.Add(-1)
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	backoff := time.Duration(0)
	// The wait for the layout's background removals runs on a goroutine
	// of its own, so that a stuck removal delays no pass; it honours ctx,
	// and Run waits for it to end before it returns.
	settled := make(chan error, 1)
	settling := false
	defer func() {
		if settling {
			<-settled
		}
	}()
	for {
		released := p.store.releases() // before reclaiming: no release is missed
		if err := p.lock(ctx); err != nil {
			return nil
		}
		reclaims := p.reclaimLocked()
		p.unlock()
		p.finishReclaims(reclaims)
		retry := false
		arm := func() {
			if !retry {
				retry = true
				backoff = min(max(2*backoff, p.retryMin), p.retryMax)
				timer.Reset(backoff)
			}
		}
		if failed(reclaims) {
			arm()
		}
		if !settling {
			settling = true
			go func() { settled <- p.settleDisk(ctx) }()
		}
	wait:
		for {
			var retryC <-chan time.Time
			var wake <-chan struct{}
			poke := p.poke
			if retry {
				retryC, poke = timer.C, nil // a failure is retried after the backoff only
			} else {
				wake = released
			}
			select {
			case <-ctx.Done():
				return nil
			case <-retryC:
				break wait
			case <-wake:
				break wait
			case <-poke:
				break wait
			case err := <-settled:
				settling = false
				events := p.settleEvents(ctx, err)
				p.finishReclaims(events)
				if failed(events) {
					arm()
				} else if !retry {
					backoff = 0
				}
			}
		}
	}
}

// settleEvents turns what the wait for the layout's background removals
// (the trees a prune set aside) returned into reclaim events: a removal
// that failed, or one still running past the deadline, one event per
// generation whose directory it was and one for the rest. It marks Root
// dirty, so that the next pass prunes, and so retries, what a failure
// left; a stuck removal is left to run, never started twice.
func (p *Publisher) settleEvents(ctx context.Context, err error) []ReclaimEvent {
	var stalled *dirlife.StalledError
	if !errors.As(err, &stalled) {
		p.stalled.Store(0)
	}
	if err == nil || ctx.Err() != nil {
		return nil
	}
	if p.lock(ctx) != nil {
		return nil
	}
	p.dirty = true
	p.unlock()
	if stalled == nil {
		return p.reclaimFailed(0, err)
	}
	p.stalled.Store(int64(len(stalled.Entries)))
	codec := dirlife.IntCodec[int64]{Prefix: "gen-"}
	var events []ReclaimEvent
	other := false
	for _, e := range stalled.Entries {
		if g, ok := codec.Parse(e.Name); ok {
			events = append(events, ReclaimEvent{Generation: g, Err: err})
		} else {
			other = true
		}
	}
	if other {
		events = append(events, ReclaimEvent{Err: err})
	}
	return events
}

func failed(reclaims []ReclaimEvent) bool {
	return slices.ContainsFunc(reclaims, func(ev ReclaimEvent) bool { return ev.Err != nil })
}

// reclaimLocked removes every entry under Root but the current and the
// leased generations, and reports each generation directory it tried to
// remove. The caller holds the serialisation, so nothing becomes current
// meanwhile, and a lease taken after the keep set is read can only be on
// the current generation.
func (p *Publisher) reclaimLocked() []ReclaimEvent {
	keep, doomed, err := p.doomed()
	if err != nil {
		return p.reclaimFailed(0, err)
	}
	if len(doomed) == 0 && !p.dirty {
		return nil // nothing to remove: no need to lock Root
	}
	pruneErr := p.prune(keep...)
	p.dirty = pruneErr != nil
	if len(doomed) == 0 {
		if pruneErr != nil {
			return p.reclaimFailed(0, pruneErr)
		}
		p.statsMu.Lock()
		p.stats.LastError = nil // the retry of a failed removal succeeded
		p.reclaimErr = nil
		p.statsMu.Unlock()
		return nil
	}
	after, err := p.layout.Generations()
	if err != nil {
		return p.reclaimFailed(0, errors.Join(pruneErr, err))
	}
	now := time.Now()
	events := make([]ReclaimEvent, 0, len(doomed)+1)
	reported := false
	for _, g := range doomed {
		if _, found := slices.BinarySearch(after, g); found {
			if pruneErr == nil {
				pruneErr = errors.New("platform: directory still present after prune")
				p.dirty = true
			}
			events = append(events, ReclaimEvent{Generation: g, Err: pruneErr})
			reported = true
			continue
		}
		since, ok := p.superseded[g]
		if rel, relOK := p.store.releasedAt(g); relOK && (!ok || rel.After(since)) {
			since, ok = rel, true
		}
		delete(p.superseded, g)
		ev := ReclaimEvent{Generation: g}
		if ok {
			ev.Delay = max(now.Sub(since), 0)
		}
		events = append(events, ev)
	}
	if pruneErr != nil && !reported {
		// Every doomed generation went; something else would not (a
		// staging leftover, an earlier removal).
		events = append(events, ReclaimEvent{Err: pruneErr})
	}
	for g := range p.superseded {
		if _, found := slices.BinarySearch(after, g); !found {
			delete(p.superseded, g)
		}
	}
	p.store.dropReleases(after)
	return events
}

// doomed lists the generation directories on disk that are neither current
// nor leased, and the keep set it read. The caller holds the serialisation.
func (p *Publisher) doomed() (keep, doomed []int64, err error) {
	onDisk, err := p.layout.Generations()
	if err != nil {
		return nil, nil, err
	}
	keep = p.store.Leased()
	if g := p.store.Generation(); g != 0 {
		if i, found := slices.BinarySearch(keep, g); !found {
			keep = slices.Insert(keep, i, g)
		}
	}
	for _, g := range onDisk {
		if _, found := slices.BinarySearch(keep, g); !found {
			doomed = append(doomed, g)
		}
	}
	return keep, doomed, nil
}

// pruneAfterSet prunes after a successful publish, or, when the reclaim
// loop runs and has not fallen behind (at most the generation just
// superseded awaits removal), hands the removal to it, so that Publish's
// latency excludes garbage removal. The caller holds the serialisation.
func (p *Publisher) pruneAfterSet() []ReclaimEvent {
	if p.running.Load() > 0 && !p.dirty {
		if _, doomed, err := p.doomed(); err == nil && len(doomed) <= 1 {
			if len(doomed) == 1 {
				p.wakeReclaim()
			}
			return nil
		}
	}
	return p.reclaimLocked()
}

// wakeReclaim asks the reclaim loop for a pass.
func (p *Publisher) wakeReclaim() {
	select {
	case p.poke <- struct{}{}:
	default:
	}
}

// wakeToSettle asks the reclaim loop for a pass after a Publish or Forget
// removed a generation directory itself, so that the loop waits for the
// tree's background removal and retries it if it fails there.
func (p *Publisher) wakeToSettle(reclaims []ReclaimEvent) {
	if p.running.Load() > 0 && slices.ContainsFunc(reclaims, func(ev ReclaimEvent) bool { return ev.Err == nil }) {
		p.wakeReclaim()
	}
}

// reclaimFailed reports a failure that concerns no single generation.
func (p *Publisher) reclaimFailed(generation int64, err error) []ReclaimEvent {
	return []ReclaimEvent{{Generation: generation, Err: err}}
}

// finishReclaims records reclaims in the stats, logs them and calls
// OnReclaim for each. It runs after the Publisher's serialisation is
// released. A failure outside the reclaim loop pokes the loop to retry.
func (p *Publisher) finishReclaims(reclaims []ReclaimEvent) {
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
		p.stats.Prunes++
		p.stats.ReclaimDelay = ev.Delay
	}
	// A removal beside a failed one does not hide the failure.
	p.reclaimErr = lastErr
	p.stats.LastError = lastErr
	p.statsMu.Unlock()
	for _, ev := range reclaims {
		if ev.Err != nil {
			p.log.Error("platform: removing a generation", "generation", ev.Generation, "err", ev.Err)
			p.wakeReclaim()
		} else {
			p.log.Debug("platform: removed a generation", "generation", ev.Generation, "delay", ev.Delay)
		}
		if p.onReclaim != nil {
			p.onReclaim(ev)
		}
	}
}
