package platform

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"leasekit.dev/dirlife"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// Publish makes files the module of generation and returns the record it
// set: Write, BuildPlatform, SetGenerated, then Prune to the current and
// every leased generation. Concurrent calls run one at a time; a call
// waits for its turn until ctx ends.
//
//   - A generation below 1, an empty file set, a skew policy other than
//     Warn or Refuse ([*SkewPolicyError]), a file name the layout refuses
//     (a [*dirlife.NameError] naming it), or a Publisher not booted
//     are refused before anything is touched: a refused rewrite of the
//     current generation drains no lease and rewrites nothing.
//   - A generation older than the current one is refused with a
//     [*StaleError], touching nothing.
//   - The current generation with byte-identical files (compared with the
//     files last published, not with disk) writes and builds nothing: the
//     current record comes back, with skew as given.
//   - The current generation with different files stops new leases on it
//     (the store holds nothing meanwhile), waits with ctx until its leases
//     are released, then rewrites, builds and sets it. If ctx ends first,
//     the record is put back, nothing on disk has changed, and ctx's error
//     is returned. If the new files fail to build, the old files are
//     written back and the old record is set again.
//   - A failed build returns the kernel's error (errors.As a
//     [*kernel.Error], positions intact) and leaves the current record and
//     its directory as they were; the failed directory of a new generation
//     is removed.
//
// A Write that published its directory but could not sync it
// ([dirlife.ErrNotDurable]) fails the publish like any write error: the
// new directory is removed (a rewrite's old files are written back) and a
// retry publishes again.
//
// The superseded directory leaves its path before Publish returns (or at
// Run's next pass); its space is freed in the background right after,
// never while Publish holds the serialisation ([Layout.Settle] waits for
// it). A removal that fails after a successful publish does not fail it:
// the error goes to OnReclaim, Stats and the log, and the reclaim loop
// retries.
//
// Publish keeps a copy of the files it published, to compare the next
// publish with; the caller may reuse files and their buffers as soon as
// Publish returns.
func (p *Publisher) Publish(ctx context.Context, generation int64, files platformmodule.Files, skew kernel.SkewPolicy) (Generated, error) {
	var t PublishTimings
	var reclaims []ReclaimEvent
	rec, outcome, err := p.publish(ctx, generation, files, skew, &t, &reclaims)
	p.finishPublish(PublishEvent{Generation: generation, Outcome: outcome, Timings: t, Err: err}, reclaims)
	return rec, err
}

func (p *Publisher) publish(ctx context.Context, generation int64, files platformmodule.Files, skew kernel.SkewPolicy, t *PublishTimings, reclaims *[]ReclaimEvent) (Generated, Outcome, error) {
	if !p.booted.Load() {
		return Generated{}, Failed, ErrNotBooted
	}
	if err := checkGeneration(generation); err != nil {
		return Generated{}, Failed, err
	}
	if len(files) == 0 {
		return Generated{}, Failed, fmt.Errorf("platform: publish generation %d: %w", generation, ErrNoFiles)
	}
	if err := checkSkew(generation, skew); err != nil {
		return Generated{}, Failed, err
	}
	if err := p.lock(ctx); err != nil {
		return Generated{}, Failed, err
	}
	defer p.unlock()

	cur, held := p.store.Generated()
	switch {
	case held && generation < cur.Generation:
		return Generated{}, Stale, &StaleError{Generation: generation, Current: cur.Generation}
	case held && generation == cur.Generation && sameFiles(files, p.files):
		if skew != cur.Skew {
			cur.Skew = skew
			p.store.SetGenerated(cur)
		}
		return cur, Unchanged, nil
	}
	rewrite := held && generation == cur.Generation
	// Refuse names the layout would refuse before draining anything: a
	// rewrite would otherwise stop renders, wait for their leases and write
	// the old files back, all for an input that could never be written.
	if err := dirlife.CheckFiles(files); err != nil {
		return Generated{}, Failed, fmt.Errorf("platform: publish generation %d: %w", generation, err)
	}
	if err := p.takeOver(ctx, generation, rewrite); err != nil {
		if rewrite {
			p.store.SetGenerated(cur)
		}
		return Generated{}, Failed, err
	}

	dir, plat, outcome, err := p.writeAndBuild(ctx, generation, files, t)
	if err != nil {
		p.dirty = true // Root may hold the failed directory or a staging leftover
		if rewrite {
			start := time.Now()
			err = p.restore(cur, err)
			t.Write += time.Since(start)
		}
		start := time.Now()
		*reclaims = p.reclaimLocked()
		t.Prune = time.Since(start)
		return Generated{}, outcome, err
	}

	start := time.Now()
	rec := Generated{Generation: generation, Dir: dir, Platform: plat, Skew: skew}
	p.store.SetGenerated(rec)
	p.files = cloneFiles(files)
	if held && !rewrite {
		p.superseded[cur.Generation] = time.Now()
	}
	t.Set = time.Since(start)

	start = time.Now()
	*reclaims = p.pruneAfterSet()
	t.Prune = time.Since(start)
	if rewrite {
		return rec, Rewritten, nil
	}
	return rec, Published, nil
}

// takeOver makes generation's directory free to write: for a rewrite it
// stops new leases on the current record, then it waits until generation
// has no lease (a forgotten generation may still have some). It returns
// ctx's error, leaving the store cleared for a rewrite, when ctx ends
// first or has ended. The caller holds the serialisation.
func (p *Publisher) takeOver(ctx context.Context, generation int64, rewrite bool) error {
	if rewrite {
		p.store.Clear() // no new lease on the directory about to change
	}
	if err := p.store.waitDrained(ctx, generation); err != nil {
		return err
	}
	return ctx.Err()
}

// writeAndBuild writes files as generation's directory and builds it,
// timing both. outcome is BuildFailed for the kernel's refusal, Failed
// for any other error.
func (p *Publisher) writeAndBuild(ctx context.Context, generation int64, files platformmodule.Files, t *PublishTimings) (dir string, plat *kernel.Platform, outcome Outcome, err error) {
	start := time.Now()
	dir, err = p.write(generation, files)
	t.Write = time.Since(start)
	if err != nil {
		return "", nil, Failed, err
	}
	start = time.Now()
	plat, err = p.kernel.BuildPlatform(ctx, dir)
	t.Build = time.Since(start)
	if _, ok := errors.AsType[*kernel.Error](err); ok {
		return "", nil, BuildFailed, err
	}
	if err != nil {
		return "", nil, Failed, err
	}
	return dir, plat, Published, nil
}

// restore writes the files of cur back after a failed rewrite and sets cur
// again. If the old files cannot be written back, the store stays empty: a
// record is never set over a directory that does not hold its files.
func (p *Publisher) restore(cur Generated, cause error) error {
	if _, err := p.write(cur.Generation, p.files); errors.Is(err, dirlife.ErrNotDurable) {
		// The old files are back in place; only their sync failed.
		p.store.SetGenerated(cur)
		return errors.Join(cause, err)
	} else if err != nil {
		p.files = nil
		return errors.Join(cause, fmt.Errorf("platform: restoring generation %d after a failed rewrite: %w", cur.Generation, err))
	}
	p.store.SetGenerated(cur)
	return cause
}

// finishPublish records ev in the stats, logs it and calls the callbacks.
// It runs after the Publisher's serialisation is released.
func (p *Publisher) finishPublish(ev PublishEvent, reclaims []ReclaimEvent) {
	p.finishReclaims(reclaims)
	p.wakeToSettle(reclaims)
	p.statsMu.Lock()
	switch ev.Outcome {
	case Published, Rewritten:
		p.stats.Publishes++
	case Unchanged:
		p.stats.Unchanged++
	case BuildFailed:
		p.stats.FailedBuilds++
	}
	if ev.Outcome != Unchanged {
		p.stats.LastPublish = ev.Timings
	}
	switch {
	case ev.Err != nil:
		p.stats.LastError = ev.Err
	case !failed(reclaims):
		// A publish that succeeded does not hide a removal that still
		// fails: the reclaim loop is retrying it.
		p.stats.LastError = p.reclaimErr
	}
	p.statsMu.Unlock()

	switch {
	case ev.Err != nil:
		p.log.Error("platform: publish", "generation", ev.Generation, "outcome", ev.Outcome.String(), "err", ev.Err)
	case ev.Outcome == Unchanged:
		p.log.Debug("platform: publish", "generation", ev.Generation, "outcome", ev.Outcome.String())
	default:
		p.log.Info("platform: publish", "generation", ev.Generation, "outcome", ev.Outcome.String(),
			"write", ev.Timings.Write, "build", ev.Timings.Build, "set", ev.Timings.Set, "prune", ev.Timings.Prune)
	}
	if p.onPublish != nil {
		p.onPublish(ev)
	}
}

// sameFiles reports whether a and b hold the same paths with the same
// bytes.
func sameFiles(a, b platformmodule.Files) bool {
	return b != nil && maps.EqualFunc(a, b, bytes.Equal)
}

// cloneFiles copies files deeply: the caller may reuse its buffers.
func cloneFiles(files platformmodule.Files) platformmodule.Files {
	c := make(platformmodule.Files, len(files))
	for name, data := range files {
		c[name] = bytes.Clone(data)
	}
	return c
}
