package kernel

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/literal"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/cue/token"
	"cuelang.org/go/mod/modfile"
	"cuelang.org/go/mod/module"
	"golang.org/x/mod/semver"
)

const moduleFile = "cue.mod/module.cue"

// A moduleInfo is what the kernel reads of a module's cue.mod/module.cue.
type moduleInfo struct {
	path string // the module path, when the file sets it with a string literal

	// language is the file's language version when the file is plain,
	// and "" when it is not; see plainLanguage.
	language string
}

// plain reports whether the loader's own validation of the module file is
// sure to accept it, with path as the module and language as its language
// version.
func (m moduleInfo) plain() bool { return m.language != "" }

// readModuleFile reads the module file of the module at the root of fsys,
// shown in errors as name. It refuses a module that declares dependencies:
// the kernel loads no registry, so each platform and instance module must
// stand alone. The loader validates the rest of the file.
func readModuleFile(fsys fs.FS, name string) (moduleInfo, error) {
	data, err := fs.ReadFile(fsys, moduleFile)
	if errors.Is(err, fs.ErrNotExist) {
		return moduleInfo{}, fmt.Errorf("not a CUE module: %s is missing", name)
	}
	if err != nil {
		return moduleInfo{}, err
	}
	f, err := parser.ParseFile(name, data)
	if err != nil {
		return moduleInfo{}, err
	}
	var m moduleInfo
	for _, d := range f.Decls {
		fd, ok := d.(*ast.Field)
		if !ok {
			continue
		}
		switch label, _, _ := ast.LabelName(fd.Label); label {
		case "deps":
			return moduleInfo{}, cueerrors.Newf(fd.Pos(), "the module declares dependencies; platform and instance modules must be self-contained, and the kernel uses no registry")
		case "module":
			m.path, _ = stringLit(fd.Value)
		}
	}
	m.language = plainLanguage(f)
	return m, nil
}

// plainLanguage returns the language version of a module file that holds
// exactly two regular fields, each a string literal and each set once: a
// module path with a major version that module.CheckPath accepts, and a
// language version that is canonical, no newer than the evaluator's and
// no older than the first module file schema that knows every field. It
// returns "" for any other file.
//
// The loader validates a module file by evaluating it against a CUE
// schema: a fifth of the cost of a render. A plain file passes that
// validation by construction, so the kernel loads its package without
// showing the loader the file (see loadPackage); any other file is left to
// the loader.
func plainLanguage(f *ast.File) string {
	var path, version string
	for _, d := range f.Decls {
		fd, ok := d.(*ast.Field)
		if !ok || !regular(fd) {
			return ""
		}
		label, _, err := ast.LabelName(fd.Label)
		if err != nil {
			return ""
		}
		switch {
		case label == "module" && path == "":
			if path, ok = stringLit(fd.Value); !ok {
				return ""
			}
		case label == "language" && version == "":
			if version, ok = languageVersion(fd.Value); !ok {
				return ""
			}
		default:
			return ""
		}
	}
	if _, _, ok := ast.SplitPackageVersion(path); !ok || module.CheckPath(path) != nil {
		return ""
	}
	if !semver.IsValid(version) || semver.Canonical(version) != version ||
		semver.Compare(version, cue.LanguageVersion()) > 0 ||
		semver.Compare(version, modfile.EarliestClosedSchemaVersion()) < 0 {
		return ""
	}
	return version
}

// languageVersion returns the version of a language struct holding
// nothing but a version field.
func languageVersion(x ast.Expr) (string, bool) {
	s, ok := x.(*ast.StructLit)
	if !ok || len(s.Elts) != 1 {
		return "", false
	}
	fd, ok := s.Elts[0].(*ast.Field)
	if !ok || !regular(fd) {
		return "", false
	}
	if label, _, err := ast.LabelName(fd.Label); err != nil || label != "version" {
		return "", false
	}
	return stringLit(fd.Value)
}

// regular reports whether fd is a regular field with no attributes.
func regular(fd *ast.Field) bool {
	return fd.Constraint == token.ILLEGAL && len(fd.Attrs) == 0
}

// stringLit returns the value of a single-line, double-quoted string
// literal: not bytes, not a raw or multi-line string.
func stringLit(x ast.Expr) (string, bool) {
	lit, ok := x.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING || !strings.HasPrefix(lit.Value, `"`) || strings.HasPrefix(lit.Value, `"""`) {
		return "", false
	}
	s, err := literal.Unquote(lit.Value)
	return s, err == nil
}
