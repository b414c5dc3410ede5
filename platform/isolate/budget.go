package isolate

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrBudget is the error a build or render in a worker returns, wrapped in
// a *BudgetError, when the worker was killed past one of the [Workers]
// budgets.
var ErrBudget = errors.New("isolate: evaluation past a budget")

// ErrClosed is the error a build or render returns, wrapped in a
// *WorkerError, when its Workers are closed before or while it runs.
var ErrClosed = errors.New("isolate: workers closed")

// A BudgetError reports a build or render whose worker was killed past
// one of the budgets of its [Workers]: the time a call may take, or the
// memory a worker may hold. The worker is gone; the next call gets
// another.
type BudgetError struct {
	Op     string // "build" or "render"
	Dir    string // the module: the platform's directory for a build, the instance's for a render
	Budget string // "time" or "memory"

	// Value is the budget in force: nanoseconds for "time" (see
	// Workers.Timeout), bytes for "memory" (see Workers.Memory).
	Value int64
}

// Error names the module, the budget and its value.
func (e *BudgetError) Error() string {
	switch e.Budget {
	case "time":
		return fmt.Sprintf("isolate: %s %s: the worker was killed past the time budget of %v (Workers.Timeout)",
			e.Op, e.Dir, time.Duration(e.Value))
	case "memory":
		return fmt.Sprintf("isolate: %s %s: the worker was killed past the memory budget of %s (Workers.Memory)",
			e.Op, e.Dir, formatBytes(e.Value))
	}
	return fmt.Sprintf("isolate: %s %s: the worker was killed past the %s budget of %d", e.Op, e.Dir, e.Budget, e.Value)
}

// Is reports whether target is ErrBudget.
func (e *BudgetError) Is(target error) bool { return target == ErrBudget }

// A WorkerError reports a build or render whose worker could not be
// started, ended after it acknowledged the request but before it answered
// (killed from outside, crashed, or stopped by Close), or answered in a
// frame the pool could not read, and was killed; or whose Workers were
// closed. The worker is gone; the next call gets another.
type WorkerError struct {
	Op  string // "build" or "render"
	Dir string // the module, as for a BudgetError
	Err error  // what happened: the process's exit status and the start of what it wrote to its standard error, ErrClosed, ...
}

// Error names the module and what happened to the worker.
func (e *WorkerError) Error() string {
	return fmt.Sprintf("isolate: %s %s: %s", e.Op, e.Dir, unprefixed(e.Err))
}

// Unwrap returns what happened to the worker.
func (e *WorkerError) Unwrap() error { return e.Err }

// formatBytes writes n bytes in the largest binary unit that divides it:
// "256MiB", "1536KiB", "100B".
func formatBytes(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.name)
		}
	}
	return fmt.Sprintf("%dB", n)
}

// unprefixed returns the text of err without the "isolate: " it may begin
// with: the WorkerError wrapping it says it once, in front.
func unprefixed(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.TrimPrefix(err.Error(), "isolate: ")
}
