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
// set: [publish.Publisher.Publish] with BuildPlatform as build step, whose
// doc and [publish.Outcome] say what each case does, when it blocks and
// what a failure leaves (the current record and its directory as they
// were).
//
// Besides publish's refusals (not booted, an empty file set, a name the
// layout refuses, a [*publish.StaleError] for a generation older than the
// current one), a generation below 1 ([*GenerationError]) and a skew
// policy other than Warn or Refuse ([*SkewPolicyError]) are refused, with
// outcome Failed, before anything is written. A failed build returns the
// evaluator's error: the kernel's refusal of the content, as
// [kernel.IsRefusal] tells it (a [*kernel.Error], positions intact, or a
// [*kernel.LimitError] or [*kernel.FileError] naming the file), is
// [publish.BuildFailed]; any other
// (ctx's, an I/O error, with an [*isolate.Workers] an
// [*isolate.BudgetError] or [*isolate.WorkerError]) is [publish.Failed].
// A refusal begins with "platform: "; the evaluator's errors are its own.
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

// platformError gives the generic publisher's own refusals (a stale
// generation, a name dirlife refuses, not booted) the platform's prefix in
// place of publish's, wrapped so that errors.Is and errors.As still reach
// them.
func platformError(err error) error {
	if err != nil && strings.HasPrefix(err.Error(), "publish: ") {
		return prefixed{err}
	}
	return err
}

// prefixed is an error of the generic publisher's, said by the platform.
type prefixed struct{ err error }

func (e prefixed) Error() string {
	if st, ok := errors.AsType[*publish.StaleError[int64]](e.err); ok {
		// A platform's keys are generations.
		return fmt.Sprintf("platform: generation %d is older than the current generation %d: %v", st.Key, st.Current, publish.ErrStale)
	}
	return "platform: " + strings.TrimPrefix(e.err.Error(), "publish: ")
}
func (e prefixed) Unwrap() error { return e.err }
