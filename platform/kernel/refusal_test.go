package kernel

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

// TestIsRefusal: IsRefusal says of an error what errors.As says of the
// three refusals (*Error, *LimitError, *FileError), wherever in the tree
// they sit, and so does it of the error flattened and of the error after
// a trip through the codec.
func TestIsRefusal(t *testing.T) {
	problems := &Error{Op: "build", Dir: "/p", Problems: []Problem{{Message: "name: incomplete"}}}
	limit := &LimitError{Limit: "MaxDepth", Dir: "/p", File: "p.cue", Value: 101, Max: 100}
	file := &FileError{Dir: "/p", File: "fifo", Rule: "is a named pipe (p---------), not a regular file"}
	skew := &SkewError{Path: "example.com/web@v1", InstanceVersion: "1.1.0", PlatformVersion: "v1.0.0"}
	catalog := &CatalogError{Path: "example.com/web@v1", Rule: "is not carried by platform acme"}
	notExist := &fs.PathError{Op: "open", Path: "/p", Err: fs.ErrNotExist}
	for _, err := range []error{
		nil, context.Canceled, notExist, errors.New("disk on fire"),
		problems, limit, file, skew, catalog,
		&ContentError{Dir: "/p", Want: "sha256:a", Got: "sha256:b"},
		&ContentError{Dir: "/p", Want: "sha256:a", Got: "sha256:b", Err: problems},
		fmt.Errorf("publish: %w", file),
		errors.Join(context.Canceled, limit),
		errors.Join(skew, catalog),
		fmt.Errorf("build: %w", notExist),
	} {
		_, isProblems := errors.AsType[*Error](err)
		_, isLimit := errors.AsType[*LimitError](err)
		_, isFile := errors.AsType[*FileError](err)
		want := isProblems || isLimit || isFile
		if got := IsRefusal(err); got != want {
			t.Errorf("IsRefusal(%v) = %v, want %v", err, got, want)
		}
		if got := IsRefusal(flatten(err)); got != want {
			t.Errorf("IsRefusal of %v flattened = %v, want %v", err, got, want)
		}
		if got := IsRefusal(DecodeError(EncodeError(err))); got != want {
			t.Errorf("IsRefusal of %v through the codec = %v, want %v", err, got, want)
		}
	}
}
