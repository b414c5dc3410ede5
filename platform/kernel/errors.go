package kernel

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

// An Error reports every problem a build or render found, each with the
// positions in the module's files that it concerns.
type Error struct {
	Op       string    // "build" or "render"
	Dir      string    // the module directory (the platform's for a build)
	Problems []Problem // at least one
	Err      error     // the underlying error
}

// A Problem is one thing wrong with a module.
type Problem struct {
	Path      string   // the CUE path of the offending value, if known: "catalogs.\"x\".version"
	Message   string   // what is wrong
	Positions []string // file:line:column of each source position involved
}

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

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// asError turns err into an *Error listing each of its problems; a context
// error, or an error that is an *Error, a *SkewError or a *CatalogError
// already, is returned as it is.
func asError(op, dir string, err error) error {
	var ke *Error
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ke) {
		return err
	}
	e := &Error{Op: op, Dir: dir, Err: err}
	for _, ce := range cueerrors.Errors(err) {
		format, args := ce.Msg()
		p := Problem{Message: fmt.Sprintf(format, args...), Path: strings.Join(ce.Path(), ".")}
		seen := map[string]bool{}
		for _, pos := range append([]token.Pos{ce.Position()}, ce.InputPositions()...) {
			if s := posString(pos); s != "" && !seen[s] {
				seen[s] = true
				p.Positions = append(p.Positions, s)
			}
		}
		// The user's files first: the schema's positions only say which
		// rule applied.
		slices.SortStableFunc(p.Positions, func(a, b string) int {
			return cmp.Compare(btoi(strings.HasPrefix(a, schemaFile)), btoi(strings.HasPrefix(b, schemaFile)))
		})
		e.Problems = append(e.Problems, p)
	}
	if len(e.Problems) == 0 {
		e.Problems = []Problem{{Message: err.Error()}}
	}
	return e
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
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

// fieldError is a CUE error at the value at path under v.
func fieldError(v cue.Value, path []string, format string, args ...any) error {
	sels := make([]cue.Selector, len(path))
	for i, p := range path {
		sels[i] = cue.Str(p)
	}
	at := v.LookupPath(cue.MakePath(sels...))
	if !at.Exists() {
		at = v
	}
	return &pathError{pos: at.Pos(), path: path, msg: cueerrors.NewMessagef(format, args...)}
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
