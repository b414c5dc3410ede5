package platform

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"leasekit.dev/publish"
)

// Publish makes files the module of generation and returns the record it
// set: Write, BuildPlatform, SetGenerated, then removal of every directory
// that is neither current nor leased ([publish.Publisher.Publish]).
// Concurrent calls run one at a time; a call waits for its turn until ctx
// ends, never for a render. What each case does is the [Outcome] it
// reports to OnPublish; on failure the current record and its directory
// are as they were.
//
// A Publisher not booted ([ErrNotBooted]), a generation below 1
// ([*GenerationError]), an empty file set ([ErrNoFiles]), a skew policy
// other than Warn or Refuse ([*SkewPolicyError]), a file name the layout
// refuses (a [*dirlife.NameError]) and a generation older than the
// current one ([*StaleError]) are refused before anything is written. A
// failed build returns the evaluator's error (errors.As a
// [*kernel.Error], positions intact, or a [*kernel.LimitError] or
// [*kernel.FileError] naming the file; with an [*isolate.Workers], also
// an [*isolate.BudgetError] or [*isolate.WorkerError], outcome Failed),
// and its directory goes. A Write that could not make its directory
// durable ([dirlife.ErrNotDurable]) fails the publish, and the directory
// goes.
//
// Publish keeps no copy of files: the caller may reuse them and their
// buffers as soon as it returns.
func (p *Publisher) Publish(ctx context.Context, generation int64, files platformmodule.Files, skew kernel.SkewPolicy) (Generated, error) {
	p.mustBeMade()
	rec, err := p.pub.Publish(ctx, generation, files, skew)
	if err != nil {
		return Generated{}, platformError(err)
	}
	return generatedOf(rec), nil
}

// check refuses what the generic publisher does not know of: generations
// start at 1, and the kernel knows two skew policies.
func check(generation int64, files platformmodule.Files, skew kernel.SkewPolicy) error {
	if err := checkGeneration(generation); err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("platform: publish generation %d: %w", generation, ErrNoFiles)
	}
	return checkSkew(generation, skew)
}

// platformError turns the generic publisher's stale refusal into the
// platform's, and gives the generic publisher's own refusals (a name
// dirlife refuses, not booted) the platform's prefix, wrapped so that
// errors.Is and errors.As still reach them.
func platformError(err error) error {
	if se, ok := errors.AsType[*publish.StaleError[int64]](err); ok {
		return &StaleError{Generation: se.Key, Current: se.Current}
	}
	if err != nil && strings.HasPrefix(err.Error(), "publish: ") {
		return fmt.Errorf("platform: %w", err)
	}
	return err
}

// outcomeOf maps a generic publish's outcome to the platform's: a changed
// module at the current generation is Rewritten, and a build step's error
// that is not the kernel's refusal of the module (the context ending) is
// Failed.
func outcomeOf(ev publish.PublishEvent[int64]) Outcome {
	switch ev.Outcome {
	case publish.Published:
		return Published
	case publish.Unchanged:
		return Unchanged
	case publish.Changed:
		return Rewritten
	case publish.BuildFailed:
		if kernel.IsRefusal(ev.Err) {
			return BuildFailed
		}
		return Failed
	case publish.Stale:
		return Stale
	}
	return Failed
}

func publishEvent(ev publish.PublishEvent[int64]) PublishEvent {
	return PublishEvent{
		Generation: ev.Key,
		Identity:   ev.Identity,
		Dir:        ev.Dir,
		Outcome:    outcomeOf(ev),
		Timings:    PublishTimings(ev.Timings),
		Err:        platformError(ev.Err),
	}
}

func reclaimEvent(ev publish.ReclaimEvent[int64]) ReclaimEvent {
	return ReclaimEvent{Generation: ev.Identity.Key, Identity: ev.Identity, Dir: ev.Dir, Delay: ev.Delay, Err: ev.Err}
}
