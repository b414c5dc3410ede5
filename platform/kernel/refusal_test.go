package kernel

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
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

// TestIOErrorIsNeitherContentNorRefusal: an I/O error that a read meets
// (EIO, EMFILE, a file gone), which asError wraps in an *Error with one
// problem, says nothing of the module: it is neither kept with the input
// (IsContent) nor a refusal of it (IsRefusal), also after a trip through
// the codec, and flattened for IsRefusal. A problem of the content still
// is both.
func TestIOErrorIsNeitherContentNorRefusal(t *testing.T) {
	const dir = "/p"
	for _, tc := range []struct {
		cause error
		want  bool
	}{
		{&fs.PathError{Op: "read", Path: dir + "/a.cue", Err: syscall.EIO}, false},
		{&fs.PathError{Op: "open", Path: dir + "/a.cue", Err: syscall.EMFILE}, false},
		{&fs.PathError{Op: "open", Path: dir + "/a.cue", Err: fs.ErrNotExist}, false},
		{os.NewSyscallError("getdents", syscall.EIO), false},
		{fmt.Errorf("load: %w", syscall.ENOMEM), false},
		{errors.New("a.cue: expected '}', found 'EOF'"), true},
	} {
		err := asError("build", dir, tc.cause)
		if _, ok := err.(*Error); !ok {
			t.Fatalf("asError(%v) = %T, want an *Error", tc.cause, err)
		}
		for how, e := range map[string]error{"": err, " flattened": flatten(err), " through the codec": DecodeError(EncodeError(err))} {
			if got := IsContent(e, dir); got != tc.want && how != " flattened" { // a flattened error is never content
				t.Errorf("IsContent of %v%s = %v, want %v", tc.cause, how, got, tc.want)
			}
			if got := IsRefusal(e); got != tc.want {
				t.Errorf("IsRefusal of %v%s = %v, want %v", tc.cause, how, got, tc.want)
			}
		}
	}
}
