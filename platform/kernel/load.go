package kernel

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/build"
	"cuelang.org/go/cue/load"
	"cuelang.org/go/cue/parser"

	"leasekit.dev/platform/kernel/internal/modread"
)

// A moduleSource is a module to load: its files, with its module file at
// cue.mod/module.cue, and the names its files have in positions.
type moduleSource struct {
	fsys fs.FS
	name func(fsPath string) string // maps a path in fsys ("x.cue") to its name in positions
	info modread.ModuleInfo
	mode parseMode
}

// A parseMode is how much of each CUE file a load parses.
type parseMode int

const (
	// parseAll parses each file whole: the load can be built.
	parseAll parseMode = iota
	// parseHeaders parses each file's package clause and imports only,
	// all the loader needs to choose the files it reads: the load reads
	// and hashes the same files as parseAll and cannot be built. A render
	// loads a platform so to check its content, which, once the digest
	// matches, loaded in full when the platform was built.
	parseHeaders
)

// A loadedModule is a module loaded but not built.
type loadedModule struct {
	inst   *build.Instance // cannot be built unless mode is parseAll
	mode   parseMode
	info   modread.ModuleInfo
	digest string            // of every file the load read; see moduleFS.digest
	size   int64             // bytes of the files the load read
	files  map[string][]byte // the files the load read, by slash-separated path
}

// loadDir loads the package at the root of the module in the directory
// dir through an os.Root; see loadSource. It closes the directory before
// it returns.
func loadDir(ctx context.Context, limits Limits, dir string) (loadedModule, error) {
	return loadDirMode(ctx, limits, dir, parseAll)
}

// loadDirMode is loadDir, parsing as mode says.
func loadDirMode(ctx context.Context, limits Limits, dir string, mode parseMode) (loadedModule, error) {
	src, closeSrc, err := modread.OpenDir(dir)
	if err != nil {
		return loadedModule{}, err
	}
	defer closeSrc()
	return loadSourceMode(ctx, limits, src, func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) }, mode)
}

// loadSource loads the package at the root of the module in src, whose
// files errors name with name. It reads the module through a moduleFS,
// which refuses what the kernel does not read and input past limits; a
// refusal is returned as it is, whatever the loader made of it; with any
// other error, the digest of the files read so far is returned too. Once
// ctx is done, loadSource reads nothing more and returns its error.
func loadSource(ctx context.Context, limits Limits, src modread.Source, name func(string) string) (loadedModule, error) {
	return loadSourceMode(ctx, limits, src, name, parseAll)
}

// loadSourceMode is loadSource, parsing as mode says.
func loadSourceMode(ctx context.Context, limits Limits, src modread.Source, name func(string) string, mode parseMode) (loadedModule, error) {
	fsys := modread.NewFS(ctx, src, limits.read(), name)
	var lm loadedModule
	var err error
	lm.info, err = modread.ReadModuleFile(fsys, name(modread.ModuleFile))
	if err == nil {
		err = modread.CheckCueMod(fsys, name)
	}
	if err == nil {
		lm.inst, err = loadBuild(moduleSource{fsys: fsys, name: name, info: lm.info, mode: mode})
	}
	if refusal := fsys.Refusal(); refusal != nil {
		return loadedModule{}, refusal
	}
	if err != nil {
		// The digest of what was read still tells a platform that no
		// longer loads from one that never did.
		return loadedModule{digest: fsys.Digest()}, err
	}
	lm.digest, lm.mode, lm.size, lm.files = fsys.Digest(), mode, fsys.Size(), fsys.Files()
	return lm, nil
}

// loadAside runs load on a goroutine of its own and waits for it to end,
// or for ctx to be done: then it returns ctx.Err() at once, and the load,
// reading through a moduleFS with the same ctx, stops at its next read.
func loadAside(ctx context.Context, load func() (loadedModule, error)) (loadedModule, error) {
	var lm loadedModule
	var err error
	a := goAhead(func() { lm, err = load() })
	if werr := a.waitContext(ctx); werr != nil {
		return loadedModule{}, werr
	}
	return lm, err
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
	var opts []parser.Option
	if m.mode == parseHeaders {
		opts = append(opts, parser.ImportsOnly)
	}
	full := load.Config{FS: m.fsys, Dir: "/", FromFSPath: m.name, Env: []string{"CUE_REGISTRY=none"}}
	if len(opts) > 0 {
		full.ParseFile = parseWith(opts...)
	}
	quick := full
	quick.SkipImports = true
	if m.info.Plain() {
		quick.FS = withoutModuleFile{m.fsys}
		quick.Module = m.info.Path
		quick.ParseFile = parseWith(append(slices.Clip(opts), parser.Version(m.info.Language))...)
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

// parseWith returns a parser for the loader that applies opts to the
// loader's own configuration: parser.Version(v) parses at the language
// version v, as the loader does with the version of a module file it has
// read.
func parseWith(opts ...parser.Option) func(string, any, parser.Config) (*ast.File, error) {
	return func(name string, src any, cfg parser.Config) (*ast.File, error) {
		return parser.ParseFile(name, src, cfg.Apply(opts...))
	}
}

// withoutModuleFile is a file system without its module file. It passes
// on the fast paths of the file system it wraps.
type withoutModuleFile struct{ fs.FS }

func (f withoutModuleFile) hidden(op, name string) error {
	if name == modread.ModuleFile {
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
	if name == path.Dir(modread.ModuleFile) {
		entries = slices.DeleteFunc(entries, func(e fs.DirEntry) bool { return e.Name() == path.Base(modread.ModuleFile) })
	}
	return entries, err
}
