package kernel

import (
	"fmt"

	"leasekit.dev/platform/kernel/internal/modread"
)

// A Kernel builds platforms and renders instances. The zero value is ready
// to use, with the default [Limits], and so is the result of [New]. A
// Kernel holds no state but its limits, which its calls only read: it is
// safe for concurrent use by multiple goroutines, with no mutex. Set its
// fields before the Kernel's first use.
//
// Every call builds in a cue.Context of its own and retains nothing, so
// memory does not grow with the number of calls. Loading runs on
// goroutines of the call's own: a build loads its module on one, a render
// loads the platform on one while it loads the instance (on another, for
// an instance in a directory). A cancelled context stops a call at the
// next step, and while a load is blocked in a read the call returns
// ctx.Err() at once; the loading goroutine then reads nothing more and
// ends once its current read returns. Otherwise a call returns only after
// its goroutines have ended.
type Kernel struct {
	// Limits bounds what each build and render reads and evaluates; its
	// zero fields mean the defaults.
	Limits Limits
}

// limits returns the Kernel's limits with their defaults; a nil Kernel
// has the default limits.
func (k *Kernel) limits() (Limits, error) {
	if k == nil {
		return Limits{}.resolved()
	}
	return k.Limits.resolved()
}

// Bounds returns k's Limits as set, a zero field meaning its default: the
// Limits its calls read and evaluate under. A nil Kernel's are zero.
func (k *Kernel) Bounds() Limits {
	if k == nil {
		return Limits{}
	}
	return k.Limits
}

// New returns a Kernel.
func New() *Kernel { return &Kernel{} }

// Limits bounds what a build or a render reads and evaluates, so that the
// cost of a call cannot grow without bound with hostile input. A zero field
// means its default; the zero Limits is every default. A negative field is
// misuse: BuildPlatform, ReadInstance and Render refuse it with an error
// naming the field.
//
// The defaults are far above real modules: a generated platform module is
// two files of a few kilobytes, nested less than ten levels deep, and an
// instance holds tens of components.
type Limits struct {
	// MaxFileSize is the most bytes one file may hold: 1 MiB by default.
	MaxFileSize int64

	// MaxTotalSize is the most bytes all the files read from one module
	// may hold together: 8 MiB by default.
	MaxTotalSize int64

	// MaxFiles is the most files read from one module, and the most
	// entries one of its directories may list: 1,000 by default.
	MaxFiles int

	// MaxDepth is the deepest nesting a CUE or JSON file may hold,
	// counted over its bytes before it is parsed: each label of a field
	// (a: b: c: 1 nests three levels), each brace, bracket or parenthesis
	// but one that opens a field's value (a: {b: [1]} nests two), each
	// string interpolation, and each operator of a field's expression but
	// & and | (a: 1 + 2 + 3 nests three); nothing inside strings and
	// comments. 100 by default; the CUE files of CUE's own schemas nest
	// at most 12 levels so counted.
	MaxDepth int

	// MaxComponents is the most components an instance may hold: 1,000
	// by default.
	MaxComponents int
}

// The default limits; see Limits.
const (
	defaultMaxFileSize   = 1 << 20
	defaultMaxTotalSize  = 8 << 20
	defaultMaxFiles      = 1000
	defaultMaxComponents = 1000
)

// defaultMaxDepth is the default of Limits.MaxDepth.
const defaultMaxDepth = 100

// read returns the limits a read of one module takes, of l resolved.
func (l Limits) read() modread.Limits {
	return modread.Limits{MaxFileSize: l.MaxFileSize, MaxTotalSize: l.MaxTotalSize, MaxFiles: l.MaxFiles, MaxDepth: l.MaxDepth}
}

// resolved returns l with each zero field set to its default, or an error
// naming a negative field.
func (l Limits) resolved() (Limits, error) {
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxFileSize", l.MaxFileSize}, {"MaxTotalSize", l.MaxTotalSize}, {"MaxFiles", int64(l.MaxFiles)},
		{"MaxDepth", int64(l.MaxDepth)}, {"MaxComponents", int64(l.MaxComponents)},
	} {
		if f.v < 0 {
			return Limits{}, fmt.Errorf("kernel: Limits.%s is %d: a limit must be positive, or zero for its default", f.name, f.v)
		}
	}
	def := func(v, d int64) int64 {
		if v == 0 {
			return d
		}
		return v
	}
	return Limits{
		MaxFileSize:   def(l.MaxFileSize, defaultMaxFileSize),
		MaxTotalSize:  def(l.MaxTotalSize, defaultMaxTotalSize),
		MaxFiles:      int(def(int64(l.MaxFiles), defaultMaxFiles)),
		MaxDepth:      int(def(int64(l.MaxDepth), defaultMaxDepth)),
		MaxComponents: int(def(int64(l.MaxComponents), defaultMaxComponents)),
	}, nil
}
