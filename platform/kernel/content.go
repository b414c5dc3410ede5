package kernel

import (
	"errors"
	"fmt"
)

// ErrPlatformChanged is the error a render returns, wrapped in a
// *ContentError, when the platform's directory no longer holds the content
// the platform was built from.
var ErrPlatformChanged = errors.New("kernel: platform changed since it was built")

// A ContentError reports a render refused because the platform's
// directory no longer holds what the Platform was built from: a file
// rewritten, added or removed since BuildPlatform read it. The catalog
// and skew checks that ran against the Platform would not hold for what
// the directory holds now; build the platform again.
type ContentError struct {
	Dir  string // the platform's directory
	Want string // the Platform's Digest, "" for a Platform no build returned
	Got  string // the digest of what the render read from Dir

	// Err is why the platform no longer loads, if it does not: the
	// problems of its new content, an *Error. Nil when it loads.
	Err error
}

// Error names the directory and both digests, and why the platform no
// longer loads, if it does not.
func (e *ContentError) Error() string {
	if e.Want == "" {
		return fmt.Sprintf("kernel: platform %s: the Platform has no Digest: render only against a Platform that BuildPlatform returned", e.Dir)
	}
	msg := fmt.Sprintf("kernel: platform %s no longer holds the content the platform was built from (built from %s, now %s): build it again",
		e.Dir, e.Want, e.Got)
	if e.Err != nil {
		msg += "; it no longer loads: " + unprefixed(e.Err)
	}
	return msg
}

// Is reports whether target is ErrPlatformChanged.
func (e *ContentError) Is(target error) bool { return target == ErrPlatformChanged }

// Unwrap returns why the platform no longer loads, or nil.
func (e *ContentError) Unwrap() error { return e.Err }

// moduleError returns err as a build or render of the module in dir
// reports it: a refusal of a file or of input past a limit as it is, any
// other problem in an *Error (see asError).
func moduleError(op, dir string, err error) error {
	var (
		fe *FileError
		le *LimitError
	)
	if errors.As(err, &fe) && fe.Dir == "" {
		fe.Dir, fe.File = dir, relativeFile(dir, fe.File)
	}
	if errors.As(err, &le) && le.Dir == "" {
		le.Dir, le.File = dir, relativeFile(dir, le.File)
	}
	if fe != nil || le != nil {
		return err
	}
	return asError(op, dir, err)
}

// relativeFile returns file, a path in the module directory dir or dir
// itself, relative to dir: slash-separated, and "" for dir itself.
func relativeFile(dir, file string) string {
	if file == dir {
		return ""
	}
	return relativePos(dir, file)
}
