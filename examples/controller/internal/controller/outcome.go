package controller

import (
	"context"
	"errors"

	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
)

// An outcome is what a build's or render's error says about its input.
type outcome int

const (
	// done: no error.
	done outcome = iota
	// refused: the input's own failure (its problems, a limit it goes
	// past, a file it may not hold); the same input fails the same way.
	refused
	// overBudget: the evaluation was killed past a time or memory budget;
	// the same input would be killed again. Terminal: only a new spec is
	// tried.
	overBudget
	// transient: nothing is known of the input (the worker died without
	// answering, the context ended, the Publisher is not booted, the
	// platform's directory changed); retried with backoff, never recorded
	// as a verdict.
	transient
)

// classify returns what err says of the input it came from.
func classify(err error) outcome {
	if err == nil {
		return done
	}
	if o, ok := workerFailure(err); ok {
		return o
	}
	_, content := errors.AsType[*kernel.ContentError](err)
	switch {
	case content,
		errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, platform.ErrNotBooted):
		return transient
	}
	return refused
}

// workerFailure classifies the failures of the kernel's worker processes:
// a budget is a verdict on the input, a worker that ended before it
// answered (killed from outside, crashed, closed) is not. It reports false
// for any other error.
func workerFailure(err error) (outcome, bool) {
	if _, ok := errors.AsType[*isolate.BudgetError](err); ok || errors.Is(err, isolate.ErrBudget) {
		return overBudget, true
	}
	if _, ok := errors.AsType[*isolate.WorkerError](err); ok || errors.Is(err, isolate.ErrClosed) {
		return transient, true
	}
	return 0, false
}
