package kernel

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"syscall"

	"leasekit.dev/platform/kernel/internal/modread"
)

// An Error reports every problem a build or render found, each with the
// positions in the module's files that it concerns.
//
// An Error is plain data: strings, and a cause that is plain data too. It
// holds no CUE value, cue.Context, build instance or CUE error, so keeping
// it (as a controller keeps its last error) keeps nothing of the
// evaluation that found it. So are the kernel's other errors.
//
// Its positions name files relative to their module, with the module's
// directory once, in front. A join of the kernel's errors (one for each
// catalog at fault) says each on a line of its own.
type Error struct {
	Op       string    // "build" or "render"
	Dir      string    // the module directory (the platform's for a build, the instance's for a render)
	Problems []Problem // at least one
	// Err is the underlying error flattened: its text, and for errors.Is
	// the standard sentinels it matched (fs.ErrNotExist, fs.ErrPermission,
	// fs.ErrExist, fs.ErrInvalid, fs.ErrClosed); nothing else of it.
	Err error
}

// A Problem is one thing wrong with a module.
type Problem struct {
	Path    string // the CUE path of the offending value, if known: "catalogs.\"x\".version"
	Message string // what is wrong
	// Positions holds file:line:column of each source position involved,
	// the user's files only: a file of the module in Dir relative to it
	// ("overlay.cue:3:11"), a file of the other module of a render by its
	// path on disk, an instance's Files under "instance/".
	Positions []string
}

// String returns the problem as "file:line:column: path: message",
// followed by its other positions.
func (p Problem) String() string {
	var b strings.Builder
	if len(p.Positions) > 0 {
		b.WriteString(p.Positions[0])
		b.WriteString(": ")
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	for _, pos := range p.Positions[min(1, len(p.Positions)):] {
		b.WriteString("\n\t    also ")
		b.WriteString(pos)
	}
	return b.String()
}

// Error lists every problem, each with its positions.
func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "kernel: %s %s: ", e.Op, e.Dir)
	if len(e.Problems) == 1 {
		b.WriteString(e.Problems[0].String())
		return b.String()
	}
	fmt.Fprintf(&b, "%d problems:", len(e.Problems))
	for _, p := range e.Problems {
		b.WriteString("\n\t")
		b.WriteString(p.String())
	}
	return b.String()
}

// Unwrap returns the underlying error, flattened.
func (e *Error) Unwrap() error { return e.Err }

// A FileError reports a file or directory in a module that the kernel
// refuses to read: one that is not a regular file or directory, a
// symbolic link leading out of the module, or a directory of vendored
// packages. It is returned as it is, and nothing of the module is
// evaluated. Its fields are Dir, File, Rule and Err.
//
// A named pipe, socket or device is described before it is opened, and
// opened without blocking: it is never read. A symbolic link is followed
// when its target resolves within the module. The directory given to
// BuildPlatform, or as an instance's Dir, is the caller's path and may
// itself be a link. A module file is accepted when the loader's own rules
// accept it and it declares no dependencies, however spelt; vendored
// packages (a cue.mod/pkg, gen or usr that holds a file, a link or
// anything but directories) and cue.mod/local-module.cue are refused. An
// empty cue.mod/pkg, gen or usr, or one of empty directories only,
// vendors nothing and is read as if it were absent.
type FileError = modread.FileError

// A LimitError reports input past one of a Kernel's Limits, the field
// Limit names, with Dir and File the module and file, Value what the
// input reached and Max the limit. It is returned as it is, before the
// offending input is parsed or evaluated.
type LimitError = modread.LimitError

// A SkewError reports a catalog that an instance requires in a newer
// version than the platform carries, under SkewRefuse. A render with
// several skewed catalogs returns one SkewError for each, joined; find them
// with errors.As.
type SkewError struct {
	Path            string // the catalog's module path
	InstanceVersion string // the version the instance requires
	PlatformVersion string // the version the platform carries
}

// Error names the catalog and both versions.
func (e *SkewError) Error() string { return "kernel: " + e.message() }

func (e *SkewError) message() string {
	return fmt.Sprintf("catalog %s: the instance requires %s, newer than the platform's %s (skew policy Refuse)",
		e.Path, e.InstanceVersion, e.PlatformVersion)
}

// A CatalogError reports a catalog an instance requires or a component
// uses that the platform does not offer.
type CatalogError struct {
	Path      string // the catalog's module path
	Component string // the component that uses it, or "" for the requires list
	Rule      string // what is wrong: "is not carried by the platform", ...

	// Position is where the instance requires the catalog, or where the
	// component sets its kind: file:line:column, the file relative to
	// the instance's module ("shop.cue:3:11"); "" if unknown.
	Position string
}

// Error names the position, the catalog, the component if any, and the
// rule.
func (e *CatalogError) Error() string {
	at := ""
	if e.Position != "" {
		at = e.Position + ": "
	}
	return "kernel: " + at + e.message()
}

// message names the catalog, the component if any, and the rule.
func (e *CatalogError) message() string {
	if e.Component != "" {
		return fmt.Sprintf("component %s: catalog %s %s", e.Component, e.Path, e.Rule)
	}
	return fmt.Sprintf("catalog %s %s", e.Path, e.Rule)
}

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

// Unwrap returns why the platform no longer loads, or nil.
func (e *ContentError) Unwrap() error { return e.Err }

// unprefixed returns the text of err, an error that an error of the
// kernel's own wraps, without the "kernel: " it may begin with: the
// wrapping error says it once, in front.
func unprefixed(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.TrimPrefix(err.Error(), "kernel: ")
}

// A flatError is an error reduced to plain data: its text, the sentinels
// it matched and the kernel's own errors it wrapped, plain data too.
type flatError struct {
	msg string
	is  []error
}

func (e *flatError) Error() string   { return e.msg }
func (e *flatError) Unwrap() []error { return e.is }

// sentinels are the sentinels a flattened error still matches, by the
// names they travel under (see EncodeError).
var sentinels = []struct {
	name string
	err  error
}{
	{"Canceled", context.Canceled}, {"DeadlineExceeded", context.DeadlineExceeded},
	{"ErrNotExist", fs.ErrNotExist}, {"ErrPermission", fs.ErrPermission}, {"ErrExist", fs.ErrExist},
	{"ErrInvalid", fs.ErrInvalid}, {"ErrClosed", fs.ErrClosed},
}

// A wireError is an error the kernel returns, as plain data: its type and
// fields, and the errors it wraps. Each of the kernel's own errors, the
// errors they wrap (an *fs.PathError, a syscall.Errno, a flattened error,
// a join) and the sentinels they match travel as they are, so that the
// error rebuilt on the other side equals the one sent, by type and by
// text. Any other error travels flattened.
type wireError struct {
	Kind      string       `json:"kind"`
	Op        string       `json:"op,omitempty"`
	Dir       string       `json:"dir,omitempty"`
	Path      string       `json:"path,omitempty"`
	File      string       `json:"file,omitempty"`
	Rule      string       `json:"rule,omitempty"`
	Component string       `json:"component,omitempty"`
	Position  string       `json:"position,omitempty"`
	Want      string       `json:"want,omitempty"`
	Got       string       `json:"got,omitempty"`
	Limit     string       `json:"limit,omitempty"`
	Msg       string       `json:"msg,omitempty"`
	Value     int64        `json:"value,omitempty"`
	Max       int64        `json:"max,omitempty"`
	Problems  []Problem    `json:"problems,omitempty"`
	Errs      []*wireError `json:"errs,omitempty"` // what it wraps
}

// The kernel's own error types, each described once: its name on the
// wire, its fields as plain data and back, whether it is about the
// content of the module its errors name, and whether it refuses that
// module. flatten, plainOf, the codec (EncodeError, DecodeError),
// IsContent and IsRefusal know the kernel's errors only through this
// table: adding an error type to the kernel is declaring it and adding
// its row here.
var errorKinds []errorKind

// The rows refer to functions that read the table.
func init() { errorKinds = kernelErrorKinds() }

func kernelErrorKinds() []errorKind {
	return []errorKind{
		kind("Error",
			func(e *Error) (*wireError, []error) {
				return &wireError{Op: e.Op, Dir: e.Dir, Problems: e.Problems}, []error{e.Err}
			},
			func(w *wireError, errs []error) *Error {
				return &Error{Op: w.Op, Dir: w.Dir, Problems: w.Problems, Err: first(errs)}
			},
			// Its problems, unless its cause says anything of the
			// circumstances: a context error, an fs sentinel, an I/O
			// error, or another of the kernel's errors.
			func(e *Error, dir string) bool {
				return e.Dir == dir && refused(e)
			}).refusesWhen(func(err error) bool { return refused(err.(*Error)) }),
		kind("SkewError",
			func(e *SkewError) (*wireError, []error) {
				return &wireError{Path: e.Path, Want: e.InstanceVersion, Got: e.PlatformVersion}, nil
			},
			func(w *wireError, _ []error) *SkewError {
				return &SkewError{Path: w.Path, InstanceVersion: w.Want, PlatformVersion: w.Got}
			},
			func(*SkewError, string) bool { return true }),
		kind("CatalogError",
			func(e *CatalogError) (*wireError, []error) {
				return &wireError{Path: e.Path, Component: e.Component, Rule: e.Rule, Position: e.Position}, nil
			},
			func(w *wireError, _ []error) *CatalogError {
				return &CatalogError{Path: w.Path, Component: w.Component, Rule: w.Rule, Position: w.Position}
			},
			func(*CatalogError, string) bool { return true }),
		kind("ContentError",
			func(e *ContentError) (*wireError, []error) {
				return &wireError{Dir: e.Dir, Want: e.Want, Got: e.Got}, []error{e.Err}
			},
			func(w *wireError, errs []error) *ContentError {
				return &ContentError{Dir: w.Dir, Want: w.Want, Got: w.Got, Err: first(errs)}
			},
			func(*ContentError, string) bool { return false }), // a directory that changed
		kind("FileError",
			func(e *FileError) (*wireError, []error) {
				return &wireError{Dir: e.Dir, File: e.File, Rule: e.Rule}, []error{e.Err}
			},
			func(w *wireError, errs []error) *FileError {
				return &FileError{Dir: w.Dir, File: w.File, Rule: w.Rule, Err: first(errs)}
			},
			// What a file is, not its content.
			func(*FileError, string) bool { return false }).refuses(),
		kind("LimitError",
			func(e *LimitError) (*wireError, []error) {
				return &wireError{Limit: e.Limit, Dir: e.Dir, File: e.File, Value: e.Value, Max: e.Max}, nil
			},
			func(w *wireError, _ []error) *LimitError {
				return &LimitError{Limit: w.Limit, Dir: w.Dir, File: w.File, Value: w.Value, Max: w.Max}
			},
			func(e *LimitError, dir string) bool {
				return e.Dir == dir && slices.Contains([]string{"MaxFileSize", "MaxTotalSize", "MaxFiles", "MaxDepth", "MaxComponents"}, e.Limit)
			}).refuses(),
		kind("flat",
			func(e *flatError) (*wireError, []error) { return &wireError{Msg: e.msg}, e.is },
			func(w *wireError, errs []error) *flatError { return &flatError{msg: w.Msg, is: errs} },
			func(*flatError, string) bool { return false }),
	}
}

// An errorKind is one row of errorKinds.
type errorKind struct {
	name    string
	of      func(error) bool
	encode  func(error) (*wireError, []error) // the error's fields, and the errors it wraps
	decode  func(*wireError, []error) error
	content func(err error, dir string) bool
	refusal func(error) bool // whether the kernel refuses the module: see IsRefusal; nil for never
}

// refuses returns k as the row of an error that refuses its module.
func (k errorKind) refuses() errorKind {
	return k.refusesWhen(func(error) bool { return true })
}

// refusesWhen returns k as the row of an error that refuses its module
// when refusal says so.
func (k errorKind) refusesWhen(refusal func(error) bool) errorKind {
	k.refusal = refusal
	return k
}

// refused reports whether e is the kernel's refusal of its module: it
// has problems, and its cause says nothing of the circumstances.
func refused(e *Error) bool {
	return len(e.Problems) > 0 && !circumstantial(e.Err)
}

// kind returns the row of the error type E.
func kind[E error](name string, encode func(E) (*wireError, []error), decode func(*wireError, []error) E, content func(E, string) bool) errorKind {
	return errorKind{
		name:    name,
		of:      func(err error) bool { _, ok := err.(E); return ok },
		encode:  func(err error) (*wireError, []error) { return encode(err.(E)) },
		decode:  func(w *wireError, errs []error) error { return decode(w, errs) },
		content: func(err error, dir string) bool { return content(err.(E), dir) },
	}
}

// kindOf returns the row of err's type, nil when err is none of the
// kernel's own errors.
func kindOf(err error) *errorKind {
	for i := range errorKinds {
		if errorKinds[i].of(err) {
			return &errorKinds[i]
		}
	}
	return nil
}

// kindNamed returns the row of the given name, nil when there is none.
func kindNamed(name string) *errorKind {
	for i := range errorKinds {
		if errorKinds[i].name == name {
			return &errorKinds[i]
		}
	}
	return nil
}

func first(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}

// IsContent reports whether err, an error of a build or render whose
// errors name the module dir ("instance" for an instance given as
// Files), is about the content of its input alone: the same input under
// the same Limits fails the same way, so err may be kept with the
// input's result. It is for a *CatalogError and a *SkewError; a
// *LimitError of dir for a limit on its files or its components; an
// *Error of dir whose cause matches no context or fs sentinel, is no I/O
// error and wraps none of the kernel's other errors; and an errors.Join
// of those. It is
// false for any other error: a context error, a *ContentError (a
// directory changed), a *FileError, an I/O error, an error of another
// module or of any other type.
func IsContent(err error, dir string) bool {
	if k := kindOf(err); k != nil {
		return k.content(err, dir)
	}
	if err == nil || reflect.TypeOf(err) != joinErrorType {
		return false
	}
	errs := err.(interface{ Unwrap() []error }).Unwrap()
	for _, e := range errs {
		if !IsContent(e, dir) {
			return false
		}
	}
	return len(errs) > 0
}

// IsRefusal reports whether err holds, anywhere in its tree, the kernel's
// refusal of a module: its problems (an *Error whose cause says nothing
// of the circumstances, as for IsContent), input past a limit (a
// *LimitError) or a file the kernel does not read (a *FileError). The
// same files are refused again, whatever the circumstances; only other
// files can help. It is false for a context error, an I/O error, or any
// error that holds none of those.
func IsRefusal(err error) bool {
	if err == nil {
		return false
	}
	if k := kindOf(err); k != nil && k.refusal != nil && k.refusal(err) {
		return true
	}
	switch e := err.(type) {
	case interface{ Unwrap() error }:
		return IsRefusal(e.Unwrap())
	case interface{ Unwrap() []error }:
		return slices.ContainsFunc(e.Unwrap(), IsRefusal)
	}
	return false
}

// circumstantial reports whether err, the cause of an *Error, says
// anything of the circumstances of a build or render rather than its
// input: it matches a context error or an fs sentinel, holds an I/O
// error of the system (see ioErrno), or wraps one of the kernel's own
// errors.
func circumstantial(err error) bool {
	if err == nil {
		return false
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return true
		}
	}
	_, io := ioErrno(err)
	return io || wrapsKernelError(err)
}

// ioErrno returns the system's error number in err's tree when it tells
// of the circumstances (EIO, EMFILE, ENOMEM, ENOSPC: the same files may
// read well the next time), not of the module's shape: a directory where
// a file is named (ENOTDIR, EISDIR), a loop of links (ELOOP) or a name
// too long (ENAMETOOLONG) is the module's own.
func ioErrno(err error) (syscall.Errno, bool) {
	n, ok := errors.AsType[syscall.Errno](err)
	if !ok || n == 0 {
		return 0, false
	}
	switch n {
	case syscall.ENOTDIR, syscall.EISDIR, syscall.ELOOP, syscall.ENAMETOOLONG:
		return 0, false
	}
	return n, true
}

// wrapsKernelError reports whether err's tree holds one of the kernel's
// own errors, a flattened error aside.
func wrapsKernelError(err error) bool {
	if _, flat := err.(*flatError); !flat && kindOf(err) != nil {
		return true
	}
	switch e := err.(type) {
	case interface{ Unwrap() error }:
		return e.Unwrap() != nil && wrapsKernelError(e.Unwrap())
	case interface{ Unwrap() []error }:
		return slices.ContainsFunc(e.Unwrap(), wrapsKernelError)
	}
	return false
}

var joinErrorType = reflect.TypeOf(errors.Join(errors.New("")))
