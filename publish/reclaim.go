package publish

import (
	"cmp"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"time"

	"leasekit.dev/dirlife"
)

// Run is the reclaim loop: it removes a replaced or forgotten record's
// directory soon after its last lease is released, woken by the release
// itself (no polling), until ctx ends; then it returns nil at once,
// without waiting for a removal under way. After each pass it waits,
// without the Publisher's serialisation and on a goroutine of its own,
// for the removals the layout runs in the background, so that one that
// failed, or that runs past RemovalDeadline (a stuck mount), is reported
// (Stats, OnReclaim) and retried, after a wait that doubles from RetryMin
// up to RetryMax; a stuck removal is never started twice. Every removal
// pass runs under the serialisation and re-checks that a directory is
// neither current nor leased. Run returns [ErrNotBooted] before Boot has
// succeeded.
//
// While Run runs, Publish hands it the removal of the directory it
// replaced, so that a publish's latency excludes garbage removal. Without
// Run, Publish and Forget remove before they return (the trees go in the
// background), so the disk never grows without bound; Run makes the
// removal after a release prompt.
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
		freed := p.slot.Freed() // before reclaiming: no release is missed
		if err := p.lock(ctx); err != nil {
			return nil
		}
		if !woke.IsZero() {
			p.freedAt = woke
		}
		reclaims := p.reclaimLocked()
		p.unlock()
		p.finishReclaims(reclaims)
		woke = time.Time{}
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
			go func() { settled <- p.disk.Settle(ctx) }()
		}
	wait:
		for {
			var retryC <-chan time.Time
			var wake <-chan struct{}
			poke := p.poke
			if retry {
				retryC, poke = timer.C, nil // a failure is retried after the backoff only
			} else {
				wake = freed
			}
			select {
			case <-ctx.Done():
				return nil
			case <-retryC:
				break wait
			case <-wake:
				woke = time.Now()
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

// Reclaim runs one pass of the reclaim loop now, for a caller that does
// not run Run or that waits for a removal: it removes every directory
// that is neither current nor leased and reports each removal it tried. It waits for a running Publish
// to finish. A removal that fails is reported and left for the next pass.
// Before Boot has succeeded it does nothing and returns nil.
//
// To wait until a released record's directory is gone (a test, a shutdown
// that must leave Root clean), call Reclaim after the release, then
// [Publisher.Settle]: Reclaim takes the directory out of Root, and Settle
// waits until its tree is removed. The same two calls wait for it while Run
// runs: Reclaim waits for a pass of Run under way, and Settle for the tree
// that pass left to the background. OnReclaim only tells that a removal
// was tried, which it may be before its tree is gone.
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

// Settle waits until the removals the Publisher left to the background
// are over: those of the directories that Publish, Forget, Reclaim and Run
// took out of Root, whose trees the layout removes off the serialisation.
// After a release, Reclaim then Settle waits until the released directory
// is gone ([Publisher.Reclaim]).
// Once it returns nil, Root holds no garbage of theirs. It returns at once
// when none runs. A removal that failed, or that runs past
// RemovalDeadline (a [*dirlife.StalledError]), is returned, reported as
// Run reports it (OnReclaim, Stats, the log) and left for the next pass to
// retry. When ctx ends first, Settle returns ctx.Err(); the removals go
// on.
func (p *Publisher[K, A, V]) Settle(ctx context.Context) error {
	p.made()
	err := p.disk.Settle(ctx)
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	p.finishReclaims(p.settleEvents(ctx, err))
	return err
}

// settleEvents turns what the wait for the layout's background removals
// returned into reclaim events: a removal that failed, or one still
// running past the deadline (one event per known directory it was, and
// one for the rest). It marks Root dirty, so that the next pass retries
// what a failure left; a stuck removal is left to run, never started
// twice.
func (p *Publisher[K, A, V]) settleEvents(ctx context.Context, err error) []ReclaimEvent[K] {
	stalled, isStalled := errors.AsType[*dirlife.StalledError](err)
	if !isStalled {
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
	if !isStalled {
		return []ReclaimEvent[K]{{Err: err}}
	}
	p.stalled.Store(int64(len(stalled.Entries)))
	codec := dirCodec[K]{key: p.codec}
	var events []ReclaimEvent[K]
	other := false
	for _, e := range stalled.Entries {
		if k, ok := codec.keyOf(e.Name); ok {
			events = append(events, ReclaimEvent[K]{Identity: Identity[K]{Key: k}, Dir: p.layout.Dir(e.Name), Err: err})
		} else {
			other = true
		}
	}
	if other {
		events = append(events, ReclaimEvent[K]{Err: err})
	}
	return events
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
	for name, d := range p.dirs {
		if p.keeping && d.kept {
			keep = append(keep, name) // awaits a claim
			continue
		}
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
// released (at once when it has none; after a release, by Run, or without
// Run by the next Publish, Forget or Reclaim). Like Publish, it removes
// every other directory that is neither current nor leased; a removal
// that fails is reported and retried as Publish's is. Forget waits for a
// running Publish to finish. Before Boot has succeeded it only drops the
// record.
func (p *Publisher[K, A, V]) Forget() {
	p.made()
	_ = p.lock(context.Background())
	_, cur, held := p.slot.Get()
	p.slot.Clear()
	p.curDir, p.curFP = "", fingerprint{}
	p.keeping = false // unclaimed kept directories are garbage now
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
