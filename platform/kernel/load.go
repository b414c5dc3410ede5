package kernel

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/parser"
)

// A moduleSource is a module to load: its files, with its module file at
// cue.mod/module.cue, and the names its files have in positions.
type moduleSource struct {
	fsys fs.FS
	name func(fsPath string) string // maps a path in fsys ("/x.cue") to its name in positions
	info moduleInfo
}

// dirModule returns the module in the directory dir, an absolute path,
// after checking that it is one and reading its module file.
func dirModule(dir string) (moduleSource, error) {
	fi, err := os.Stat(dir)
	if err != nil {
		return moduleSource{}, err
	}
	if !fi.IsDir() {
		return moduleSource{}, &fs.PathError{Op: "build", Path: dir, Err: fmt.Errorf("not a directory")}
	}
	fsys := os.DirFS(dir)
	info, err := readModuleFile(fsys, filepath.Join(dir, moduleFile))
	if err != nil {
		return moduleSource{}, err
	}
	name := func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) }
	return moduleSource{fsys: fsys, name: name, info: info}, nil
}

// loadPackage loads the package at the root of module m into cc.
func loadPackage(ctx context.Context, cc *cue.Context, m moduleSource) (cue.Value, error) {
	inst, err := loadBuild(m)
	if err := ctx.Err(); err != nil {
		return cue.Value{}, err
	}
	if err != nil {
		return cue.Value{}, err
	}
	return buildPackage(ctx, cc, inst)
}

// buildPackage builds the loaded package inst into cc.
func buildPackage(ctx context.Context, cc *cue.Context, inst *build.Instance) (cue.Value, error) {
	v := cc.BuildInstance(inst)
	if err := ctx.Err(); err != nil {
		return cue.Value{}, err
	}
	return v, v.Err()
}

// loadBuild loads the package at the root of module m, with no registry
// and no environment, and returns its build instance. It needs no
// cue.Context.
//
// The loader first skips imports, which halves its cost: packages of the
// standard library need no loading, the compiler finds them itself. Only a
// package that imports another package of its own module is loaded again
// in full. A plain module file (see plainLanguage) is kept from the quick
// load, which is then given the module path and language version the
// loader would have read from it.
func loadBuild(m moduleSource) (*build.Instance, error) {
	full := load.Config{FS: m.fsys, Dir: "/", FromFSPath: m.name, Env: []string{"CUE_REGISTRY=none"}}
	quick := full
	quick.SkipImports = true
	if m.info.plain() {
		quick.FS = withoutModuleFile{m.fsys}
		quick.Module = m.info.path
		quick.ParseFile = parseAt(m.info.language)
	}
	inst, err := loadOne(&quick)
	if err == nil && slices.ContainsFunc(inst.ImportPaths, notStandard) {
		inst, err = loadOne(&full)
	}
	return inst, err
}

func loadOne(cfg *load.Config) (*build.Instance, error) {
	insts := load.Instances([]string{"."}, cfg)
	if len(insts) != 1 {
		return nil, fmt.Errorf("expected one package, found %d", len(insts))
	}
	return insts[0], insts[0].Err
}

// notStandard reports whether an import path names a package outside the
// standard library: CUE reserves paths whose first element has no dot for
// the standard library.
func notStandard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return strings.Contains(first, ".")
}

// parseAt returns a parser for the loader that parses at the given
// language version, as the loader does with the version of a module file
// it has read.
func parseAt(version string) func(string, any, parser.Config) (*ast.File, error) {
	return func(name string, src any, cfg parser.Config) (*ast.File, error) {
		return parser.ParseFile(name, src, cfg.Apply(parser.Version(version)))
	}
}

// withoutModuleFile is a file system without its module file. It passes
// on the fast paths of the file system it wraps.
type withoutModuleFile struct{ fs.FS }

func (f withoutModuleFile) hidden(op, name string) error {
	if name == moduleFile {
		return &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return nil
}

func (f withoutModuleFile) Open(name string) (fs.File, error) {
	if err := f.hidden("open", name); err != nil {
		return nil, err
	}
	return f.FS.Open(name)
}

func (f withoutModuleFile) Stat(name string) (fs.FileInfo, error) {
	if err := f.hidden("stat", name); err != nil {
		return nil, err
	}
	return fs.Stat(f.FS, name)
}

func (f withoutModuleFile) ReadFile(name string) ([]byte, error) {
	if err := f.hidden("open", name); err != nil {
		return nil, err
	}
	return fs.ReadFile(f.FS, name)
}

func (f withoutModuleFile) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := fs.ReadDir(f.FS, name)
	if name == path.Dir(moduleFile) {
		entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return e.Name() == path.Base(moduleFile) })
	}
	return entries, err
}
