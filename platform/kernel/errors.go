package kernel

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// An Error reports every problem a build or render found, each with the
// positions in the module's files that it concerns.
//
// An Error is plain data: strings, and a cause that is plain data too. It
// holds no CUE value, cue.Context, build instance or CUE error, so keeping
// it (as a controller keeps its last error) keeps nothing of the
// evaluation that found it.
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

// A source is a value loaded from a module's files, reached in the
// kernel's evaluation under prefix: where to look up the user's position of
// a problem that the schema's positions alone would hide.
type source struct {
	prefix []string // such as ["#Render", "instance"]
	v      cue.Value
}

// asError turns err into an *Error listing each of its problems, with err
// flattened: what it returns is plain data, which keeps nothing of an
// evaluation alive. An error that is plain data already (one of the
// kernel's own errors, a context error, or a join of them) is returned as
// it is; one that wraps a context error or the kernel's own errors is flattened,
// still matching them. For a problem at a path under one of the
// sources, the position of that path in the source is added.
func asError(op, dir string, err error, sources ...source) error {
	if err == nil {
		return nil
	}
	if p, ok := plainOf(err); ok {
		return p
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || len(kernelErrors(err)) > 0 {
		return flatten(err)
	}
	e := &Error{Op: op, Dir: dir, Err: flatten(err)}
	var cueErr cueerrors.Error
	if !errors.As(err, &cueErr) {
		e.Problems = []Problem{{Message: relativeMessage(dir, err.Error())}}
		return e
	}
	for _, ce := range cueerrors.Errors(err) {
		format, args := ce.Msg()
		path := ce.Path()
		p := Problem{Message: fmt.Sprintf(format, args...), Path: userPath(path)}
		if p.Message == "" {
			p.Message = ce.Error()
		}
		seen := map[string]bool{}
		positions := []token.Pos{sourcePos(path, sources), ce.Position()}
		for _, pos := range append(positions, ce.InputPositions()...) {
			// The kernel's own files are no user's to open: they only
			// say which rule applied, which the message says.
			if s := posString(pos); s != "" && !isKernelFile(s) && !seen[s] {
				seen[s] = true
				p.Positions = append(p.Positions, relativePos(dir, s))
			}
		}
		e.Problems = append(e.Problems, p)
	}
	e.Problems = slices.CompactFunc(e.Problems, func(a, b Problem) bool {
		return a.Path == b.Path && a.Message == b.Message && slices.Equal(a.Positions, b.Positions)
	})
	if len(e.Problems) == 0 {
		e.Problems = []Problem{{Message: err.Error()}}
	}
	for i := range e.Problems {
		e.Problems[i].Message = relativeMessage(dir, e.Problems[i].Message)
	}
	return e
}

// sourcePos returns the position of path in the source it falls under, if
// any.
func sourcePos(path []string, sources []source) token.Pos {
	for _, s := range sources {
		if len(path) < len(s.prefix) || !slices.Equal(path[:len(s.prefix)], s.prefix) {
			continue
		}
		p := cue.ParsePath(strings.Join(path[len(s.prefix):], "."))
		if p.Err() != nil {
			continue
		}
		if v := s.v.LookupPath(p); v.Exists() {
			return v.Pos()
		}
	}
	return token.NoPos
}

func isKernelFile(pos string) bool {
	return strings.HasPrefix(pos, schemaFile) || strings.HasPrefix(pos, renderFile)
}

// relativePos returns the position pos ("file:line:column") with its file
// relative to the module directory dir, when it is in it.
func relativePos(dir, pos string) string {
	if rest, ok := strings.CutPrefix(pos, dir+"/"); ok && dir != "" {
		return rest
	}
	if rest, ok := strings.CutPrefix(pos, dir+string(filepath.Separator)); ok && dir != "" {
		return filepath.ToSlash(rest)
	}
	return pos
}

// relativeMessage returns msg with each file in the module directory dir
// named relative to it.
func relativeMessage(dir, msg string) string {
	if dir == "" {
		return msg
	}
	return strings.ReplaceAll(msg, dir+string(filepath.Separator), "")
}

// userPath returns the CUE path of a problem as a user wrote it: under
// the instance or the platform the kernel evaluates it in, without the
// kernel's definition in front ("components.web.replicas" rather than
// "#Render.instance.components.web.replicas").
func userPath(path []string) string {
	switch {
	case len(path) >= 2 && path[0] == "#Render" && path[1] == "instance":
		path = path[2:]
	case len(path) >= 1 && (path[0] == "#Render" || path[0] == "#Platform" || path[0] == "#Instance"):
		path = path[1:]
	}
	return strings.Join(path, ".")
}

func posString(p token.Pos) string {
	if !p.IsValid() {
		return ""
	}
	pos := p.Position()
	if pos.Filename == "" {
		return ""
	}
	return fmt.Sprintf("%s:%d:%d", pos.Filename, pos.Line, pos.Column)
}

// joinCUE joins two errors into one CUE error list, keeping each problem.
func joinCUE(a, b error) error {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	return cueerrors.Append(cueerrors.Promote(a, ""), cueerrors.Promote(b, ""))
}

// fieldError is a CUE error about the field at path (string labels) under
// v, at its position.
func fieldError(v cue.Value, path []string, format string, args ...any) error {
	cp := cue.MakePath(strSels(path)...)
	return &pathError{pos: v.LookupPath(cp).Pos(), path: []string{cp.String()}, msg: messagef(format, args...)}
}

func messagef(format string, args ...any) cueerrors.Message {
	return cueerrors.NewMessagef(format, args...)
}

// pathError is a CUE error at a position, about a path.
type pathError struct {
	pos  token.Pos
	path []string
	msg  cueerrors.Message
}

func (e *pathError) Position() token.Pos         { return e.pos }
func (e *pathError) InputPositions() []token.Pos { return nil }
func (e *pathError) Path() []string              { return e.path }
func (e *pathError) Msg() (string, []any)        { return e.msg.Msg() }
func (e *pathError) Error() string               { return e.msg.Error() }

// unprefixed returns the text of err, an error that an error of the
// kernel's own wraps, without the "kernel: " it may begin with: the
// wrapping error says it once, in front.
func unprefixed(err error) string {
	if err == nil {
		return "<nil>"
	}
	return strings.TrimPrefix(err.Error(), "kernel: ")
}

// The kernel's own error types, each described once: its name on the
// wire, its fields as plain data and back, and whether it is about the
// content of the module its errors name. flatten, plainOf, the codec
// (EncodeError, DecodeError) and IsContent know the kernel's errors only
// through this table: adding an error type to the kernel is declaring it
// and adding its row here.
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
			// circumstances: a context error, an fs sentinel, or another of
			// the kernel's errors.
			func(e *Error, dir string) bool {
				return e.Dir == dir && len(e.Problems) > 0 && !circumstantial(e.Err)
			}),
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
			func(*FileError, string) bool { return false }), // what a file is, not its content
		kind("LimitError",
			func(e *LimitError) (*wireError, []error) {
				return &wireError{Limit: e.Limit, Dir: e.Dir, File: e.File, Value: e.Value, Max: e.Max}, nil
			},
			func(w *wireError, _ []error) *LimitError {
				return &LimitError{Limit: w.Limit, Dir: w.Dir, File: w.File, Value: w.Value, Max: w.Max}
			},
			func(e *LimitError, dir string) bool {
				return e.Dir == dir && slices.Contains([]string{"MaxFileSize", "MaxTotalSize", "MaxFiles", "MaxDepth", "MaxComponents"}, e.Limit)
			}),
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
// *Error of dir whose cause matches no context or fs sentinel and wraps
// none of the kernel's other errors; and an errors.Join of those. It is
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

// circumstantial reports whether err, the cause of an *Error, says
// anything of the circumstances of a build or render rather than its
// input: it matches a context error or an fs sentinel, or wraps one of
// the kernel's own errors.
func circumstantial(err error) bool {
	if err == nil {
		return false
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return true
		}
	}
	return wrapsKernelError(err)
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
