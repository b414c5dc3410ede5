package kernel

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
)

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
