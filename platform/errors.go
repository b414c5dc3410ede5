package platform

import (
	"errors"
	"fmt"

	"leasekit.dev/dirlife"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/publish"
)

var (
	// ErrNotBooted is returned by Publish, Render, RenderLeased and Run of
	// a [Publisher] whose Boot has not succeeded: Root has not been
	// emptied, so stale directories of an earlier process could be
	// mistaken for current ones. It is [publish.ErrNotBooted].
	ErrNotBooted = publish.ErrNotBooted

	// ErrNotReady is returned by [Publisher.Render] when no platform is
	// held: nothing has been published yet, or the resource was forgotten.
	// A changed module never makes it: it is swapped in atomically.
	ErrNotReady = errors.New("platform: no platform is held")

	// ErrInvalidGeneration is wrapped by every [GenerationError].
	ErrInvalidGeneration = errors.New("invalid generation")

	// ErrInvalidSkew is wrapped by every [SkewPolicyError].
	ErrInvalidSkew = errors.New("invalid skew policy")

	// ErrNoFiles is [dirlife.ErrNoFiles], returned wrapped by
	// [Layout.Write] and [Publisher.Publish] for an empty file set.
	// Nothing is written.
	ErrNoFiles = dirlife.ErrNoFiles
)

// A GenerationError reports a generation number that is refused, and the
// rule it breaks. Nothing was written or changed.
type GenerationError struct {
	Generation int64
	Rule       string // such as "generations start at 1"
}

func (e *GenerationError) Error() string {
	return fmt.Sprintf("platform: generation %d: %s", e.Generation, e.Rule)
}

// Unwrap returns [ErrInvalidGeneration].
func (e *GenerationError) Unwrap() error { return ErrInvalidGeneration }

// checkGeneration refuses a generation below 1.
func checkGeneration(generation int64) error {
	if generation < 1 {
		return &GenerationError{Generation: generation, Rule: "generations start at 1"}
	}
	return nil
}

// A SkewPolicyError reports a skew policy that is neither
// [kernel.SkewWarn] nor [kernel.SkewRefuse]: every render of the record
// would pass it verbatim, and the kernel knows no other. Nothing was
// written or changed.
type SkewPolicyError struct {
	Generation int64             // the generation whose publish was refused
	Policy     kernel.SkewPolicy // the policy refused
}

func (e *SkewPolicyError) Error() string {
	return fmt.Sprintf("platform: publish generation %d: skew policy %v: must be Warn or Refuse", e.Generation, e.Policy)
}

// Unwrap returns [ErrInvalidSkew].
func (e *SkewPolicyError) Unwrap() error { return ErrInvalidSkew }

// checkSkew refuses a skew policy the kernel does not know.
func checkSkew(generation int64, skew kernel.SkewPolicy) error {
	if skew != kernel.SkewWarn && skew != kernel.SkewRefuse {
		return &SkewPolicyError{Generation: generation, Policy: skew}
	}
	return nil
}
