package modread

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
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

const ModuleFile = "cue.mod/module.cue"

// A ModuleInfo is what the kernel reads of a module's cue.mod/module.cue.
type ModuleInfo struct {
	Path string // the module path, when the file sets it with a string literal

	// Language is the file's language version when the file is plain,
	// and "" when it is not; see plainLanguage.
	Language string
}

// Plain reports whether the loader's own validation of the module file is
// sure to accept it, with path as the module and language as its language
// version.
func (m ModuleInfo) Plain() bool { return m.Language != "" }

// ReadModuleFile reads the module file of the module at the root of fsys,
// shown in errors as name, and validates it as the loader would, with
// errors that name it. It refuses a module that declares dependencies,
// however the file spells them: the kernel loads no registry, so each
// platform and instance module must stand alone. A plain file (see
// plainLanguage) is valid and declares none by construction; any other
// is evaluated, as the loader will evaluate it again.
func ReadModuleFile(fsys fs.FS, name string) (ModuleInfo, error) {
	data, err := fs.ReadFile(fsys, ModuleFile)
	if errors.Is(err, fs.ErrNotExist) {
		return ModuleInfo{}, fmt.Errorf("not a CUE module: %s is missing", name)
	}
	if err != nil {
		return ModuleInfo{}, err
	}
	f, err := parser.ParseFile(name, data)
	if err != nil {
		return ModuleInfo{}, err
	}
	var m ModuleInfo
	m.Path, _ = moduleField(f)
	if m.Language = plainLanguage(f); m.Plain() {
		return m, nil
	}
	mf, err := modfile.ParseNonStrict(data, name)
	if err != nil {
		return ModuleInfo{}, namingFile(name, err)
	}
	if len(mf.Deps) > 0 {
		deps := slices.Sorted(maps.Keys(mf.Deps))
		return ModuleInfo{}, cueerrors.Newf(depsPos(f), "the module declares dependencies (%s); platform and instance modules must be self-contained, and the kernel uses no registry",
			strings.Join(deps, ", "))
	}
	return m, nil
}

// namingFile returns err, from the module file name, with name in front
// unless one of its problems has a position in the file already.
func namingFile(name string, err error) error {
	for _, e := range cueerrors.Errors(err) {
		if e.Position().IsValid() {
			return err
		}
	}
	return fmt.Errorf("%s: %v", name, err)
}

// moduleField returns the module path a file sets at its top level with a
// string literal.
func moduleField(f *ast.File) (string, bool) {
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.Field); ok {
			if label, _, _ := ast.LabelName(fd.Label); label == "module" {
				return stringLit(fd.Value)
			}
		}
	}
	return "", false
}

// depsPos returns the position of the first field labelled deps anywhere
// in f, or the position of the file.
func depsPos(f *ast.File) token.Pos {
	pos := f.Pos()
	found := false
	ast.Walk(f, func(n ast.Node) bool {
		if fd, ok := n.(*ast.Field); ok && !found {
			if label, _, _ := ast.LabelName(fd.Label); label == "deps" {
				pos, found = fd.Pos(), true
			}
		}
		return !found
	}, nil)
	return pos
}

// CheckCueMod refuses a module whose cue.mod directory holds anything the
// loader would read beside the module file: vendored packages (a pkg, gen
// or usr that holds anything but directories) and a local-module.cue,
// which replaces dependencies. A module the kernel loads stands alone. A
// pkg, gen or usr of empty directories vendors nothing (CUE looks for a
// package there only in a directory holding CUE files), and is no
// refusal: the plain read, which keeps no empty directory, reads such a
// module as the loader does.
func CheckCueMod(fsys fs.FS, name func(string) string) error {
	entries, err := fs.ReadDir(fsys, path.Dir(ModuleFile))
	if err != nil {
		return err
	}
	for _, e := range entries {
		switch e.Name() {
		case "pkg", "gen", "usr":
			dir := path.Join(path.Dir(ModuleFile), e.Name())
			vendors, err := holdsFiles(fsys, dir, e)
			if err != nil {
				return err
			}
			if !vendors {
				continue
			}
			return &FileError{File: name(dir),
				Rule: "holds vendored packages, which the kernel does not load: a platform or instance module must be self-contained"}
		case "local-module.cue":
			return &FileError{File: name(path.Join(path.Dir(ModuleFile), e.Name())),
				Rule: "replaces dependencies, which the kernel does not load: a platform or instance module must be self-contained"}
		}
	}
	return nil
}

// holdsFiles reports whether the entry e, dir in fsys, is anything but a
// directory, or a directory with anything but directories under it.
func holdsFiles(fsys fs.FS, dir string, e fs.DirEntry) (bool, error) {
	if !e.IsDir() {
		return true, nil
	}
	found := false
	err := fs.WalkDir(fsys, dir, func(_ string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case !d.IsDir():
			found = true
			return fs.SkipAll
		}
		return nil
	})
	return found, err
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
// showing the loader the file (the kernel's loadBuild); any other file
// ReadModuleFile validates as the loader does, and the loader again.
func plainLanguage(f *ast.File) string {
	var path, version string
	var havePath, haveVersion bool
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
		case label == "module" && !havePath:
			havePath = true
			if path, ok = stringLit(fd.Value); !ok {
				return ""
			}
		case label == "language" && !haveVersion:
			haveVersion = true
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
