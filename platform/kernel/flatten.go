package kernel

import (
	"context"
	"errors"
)

// flatten returns err reduced to plain data: an error with its text that
// matches, for errors.Is, each of the sentinels err matches and the
// system's error number of an I/O error in it (see ioErrno), and for
// errors.As each of the kernel's own errors in its tree. Nothing else of
// err's tree stays reachable: a CUE error keeps its evaluation alive, a
// hundred kilobytes and more.
func flatten(err error) error {
	if err == nil {
		return nil
	}
	f := &flatError{msg: err.Error()}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			f.is = append(f.is, s.err)
		}
	}
	if n, ok := ioErrno(err); ok {
		f.is = append(f.is, n) // plain data: an I/O error stays one
	}
	f.is = append(f.is, kernelErrors(err)...)
	return f
}

// kernelErrors returns the kernel's own errors, plain data, in err's tree.
func kernelErrors(err error) []error {
	if err == nil {
		return nil
	}
	if kindOf(err) != nil {
		return []error{err}
	}
	switch e := err.(type) {
	case interface{ Unwrap() error }:
		return kernelErrors(e.Unwrap())
	case interface{ Unwrap() []error }:
		var found []error
		for _, e := range e.Unwrap() {
			found = append(found, kernelErrors(e)...)
		}
		return found
	}
	return nil
}

// plainOf returns err if it is plain data already: one of the kernel's
// own error types, a context error, or a join of nothing else (joined
// afresh).
func plainOf(err error) (error, bool) {
	if kindOf(err) != nil {
		return err, true
	}
	if err == context.Canceled || err == context.DeadlineExceeded {
		return err, true
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs := j.Unwrap()
		if len(errs) == 0 {
			return nil, false
		}
		for _, e := range errs {
			if _, ok := plainOf(e); !ok {
				return nil, false
			}
		}
		return errors.Join(errs...), true
	}
	return nil, false
}
