package kernel

import (
	"errors"
	"fmt"
)

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
	DefaultMaxFileSize   = 1 << 20
	DefaultMaxTotalSize  = 8 << 20
	DefaultMaxFiles      = 1000
	DefaultMaxDepth      = 100
	DefaultMaxComponents = 1000
)

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
		MaxFileSize:   def(l.MaxFileSize, DefaultMaxFileSize),
		MaxTotalSize:  def(l.MaxTotalSize, DefaultMaxTotalSize),
		MaxFiles:      int(def(int64(l.MaxFiles), DefaultMaxFiles)),
		MaxDepth:      int(def(int64(l.MaxDepth), DefaultMaxDepth)),
		MaxComponents: int(def(int64(l.MaxComponents), DefaultMaxComponents)),
	}, nil
}

// ErrLimit is the error a build or render returns, wrapped in a
// *LimitError, when its input goes past one of its Limits.
var ErrLimit = errors.New("kernel: input past a limit")

// A LimitError reports input past one of a Kernel's Limits. It is returned
// as it is, before the offending input is parsed or evaluated.
type LimitError struct {
	Limit string // the field of Limits: "MaxDepth", "MaxFileSize", ...
	Dir   string // the module's directory, "instance" for an instance's Files
	File  string // the file or directory past the limit, slash-separated, relative to Dir; "" for the module itself

	// Value is what the input reached: the file's size, the total size,
	// the number of files, entries or components. For MaxDepth the scan
	// stops at the first level past the limit, so Value is Max+1.
	Value int64
	Max   int64 // the limit in force
}

// Error names the limit, the file and both values.
func (e *LimitError) Error() string {
	what := map[string]string{
		"MaxFileSize":   "holds %d bytes, more than the limit of %d (Limits.MaxFileSize)",
		"MaxTotalSize":  "brings the module to %d bytes, more than the limit of %d (Limits.MaxTotalSize)",
		"MaxFiles":      "makes %d files or entries, more than the limit of %d (Limits.MaxFiles)",
		"MaxDepth":      "nests %d levels deep, more than the limit of %d (Limits.MaxDepth)",
		"MaxComponents": "holds %d components, more than the limit of %d (Limits.MaxComponents)",
	}[e.Limit]
	if what == "" {
		what = "reaches %d, more than the limit of %d (Limits." + e.Limit + ")"
	}
	return fmt.Sprintf("kernel: %s "+what, inModule(e.Dir, e.File), e.Value, e.Max)
}

// Is reports whether target is ErrLimit.
func (e *LimitError) Is(target error) bool { return target == ErrLimit }
