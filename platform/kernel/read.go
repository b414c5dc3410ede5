package kernel

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing/fstest"

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
	digest string            // of every file the load read; see modread.FS.Digest
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
// files errors name with name. It reads the module through a modread.FS,
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
// reading through a modread.FS with the same ctx, stops at its next read.
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

// snapshotOf returns the instance of in as a snapshot: in.Snapshot, or
// in.Instance read (see readInstanceModule).
func snapshotOf(ctx context.Context, limits Limits, in RenderInput, loaderReads bool) (*InstanceSnapshot, error) {
	if in.Snapshot == nil {
		return readInstanceSnapshot(ctx, limits, in.Instance, loaderReads)
	}
	if in.Instance.Dir != "" || in.Instance.Files != nil {
		return nil, errors.New("kernel: render: the input has both an Instance and a Snapshot")
	}
	return in.Snapshot, nil
}

// loadPlatform loads p's module in full, on a goroutine of its own, and
// checks that it holds the content p was built from.
func loadPlatform(ctx context.Context, limits Limits, p *Platform) (loadedModule, error) {
	m, err := loadAside(ctx, func() (loadedModule, error) { return loadDir(ctx, limits, p.Dir) })
	if cerr := ctx.Err(); cerr != nil {
		return loadedModule{}, cerr
	}
	if err := platformLoaded(p, m, err); err != nil {
		return loadedModule{}, err
	}
	return m, nil
}

// platformLoaded returns the error of a render whose platform p loaded as
// m, with err: nil if it loaded and holds the content p was built from.
func platformLoaded(p *Platform, m loadedModule, err error) error {
	if err != nil {
		// A platform that built and no longer loads has changed, unless
		// it cannot be read at all, or is refused.
		if got := m.digest; got != "" && p.Digest != "" && got != p.Digest {
			return &ContentError{Dir: p.Dir, Want: p.Digest, Got: got, Err: moduleError("render", p.Dir, err)}
		}
		return moduleError("render", p.Dir, err)
	}
	if got := m.digest; got != p.Digest {
		return &ContentError{Dir: p.Dir, Want: p.Digest, Got: got}
	}
	return nil
}

// readInstanceSnapshot is ReadInstance under limits; see
// readInstanceModule for loaderReads.
func readInstanceSnapshot(ctx context.Context, limits Limits, in Instance, loaderReads bool) (*InstanceSnapshot, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	dir, m, err := readInstanceModule(ctx, limits, in, loaderReads)
	if err != nil {
		if dir == "" { // misuse, not a problem in a module
			return nil, err
		}
		return nil, moduleError("render", dir, err)
	}
	return &InstanceSnapshot{dir: dir, files: m.files, digest: m.digest, size: m.size}, nil
}

// plainModule is a module read whole, unparsed.
func plainModule(m modread.Module) loadedModule {
	return loadedModule{files: m.Files, size: m.Size, digest: m.Digest}
}

// readInstanceModule reads the instance module in: every file of a plain
// tree within limits (see modread.ReadPlain), unless loaderReads is set,
// or else the files the loader chooses. It returns the name its errors
// give the module: "" for a malformed Instance. A module in a directory
// is read on a goroutine of its own, waited for as ctx allows; one in
// memory cannot block.
func readInstanceModule(ctx context.Context, limits Limits, in Instance, loaderReads bool) (string, loadedModule, error) {
	switch {
	case in.Dir != "" && in.Files != nil:
		return "", loadedModule{}, errors.New("kernel: render: the instance has both Dir and Files")
	case in.Dir != "":
		dir, err := filepath.Abs(in.Dir)
		if err != nil {
			return in.Dir, loadedModule{}, err
		}
		m, err := loadAside(ctx, func() (loadedModule, error) {
			src, closeSrc, err := modread.OpenDir(dir)
			if err != nil {
				return loadedModule{}, err
			}
			defer closeSrc()
			if !loaderReads {
				if m, ok := modread.ReadPlain(ctx, limits.read(), src); ok {
					return plainModule(m), nil
				}
				if err := ctx.Err(); err != nil {
					return loadedModule{}, err
				}
			}
			name := func(p string) string { return filepath.Join(dir, filepath.FromSlash(p)) }
			return loadSourceMode(ctx, limits, src, name, parseAll)
		})
		return dir, m, err
	case len(in.Files) > 0:
		const dir = "instance"
		if n := len(in.Files); n > limits.MaxFiles {
			return dir, loadedModule{}, &LimitError{Limit: "MaxFiles", File: dir, Value: int64(n), Max: int64(limits.MaxFiles)}
		}
		fsys := fstest.MapFS{}
		for name, data := range in.Files {
			if !fs.ValidPath(name) {
				return dir, loadedModule{}, fmt.Errorf("instance file %q: not a valid slash-separated relative path", name)
			}
			fsys[name] = &fstest.MapFile{Data: data}
		}
		if !loaderReads {
			if m, ok := modread.CopyPlain(limits.read(), in.Files); ok {
				return dir, plainModule(m), nil
			}
		}
		m, err := loadSourceMode(ctx, limits, modread.Memory(fsys), func(p string) string { return path.Join(dir, p) }, parseAll)
		return dir, m, err
	default:
		return "", loadedModule{}, errors.New("kernel: render: no instance (set Dir or Files)")
	}
}

// loadSnapshot loads and builds the instance module s holds into cc,
// reading nothing but its bytes, under limits. Its errors name s.dir's
// files.
func loadSnapshot(ctx context.Context, cc *cue.Context, limits Limits, s *InstanceSnapshot) (cue.Value, error) {
	fsys := make(fstest.MapFS, len(s.files))
	for name, data := range s.files {
		fsys[name] = &fstest.MapFile{Data: data}
	}
	name := func(p string) string { return path.Join(s.dir, p) }
	if s.dir != "instance" {
		name = func(p string) string { return filepath.Join(s.dir, filepath.FromSlash(p)) }
	}
	m, err := loadSource(ctx, limits, modread.Memory(fsys), name)
	if err != nil {
		return cue.Value{}, err
	}
	return buildPackage(ctx, cc, m.inst)
}

// An ahead is work running on a goroutine of its own, waited for by the
// one goroutine that started it.
type ahead struct {
	done     chan struct{} // closed when the work has ended
	panicked any
}

// goAhead runs f on a goroutine of its own.
func goAhead(f func()) *ahead {
	a := &ahead{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		defer func() { a.panicked = recover() }()
		f()
	}()
	return a
}

// wait waits for the work to end. If it panicked, wait panics with the
// same value, in the caller's goroutine, where the caller can recover it
// as if the work had run there.
func (a *ahead) wait() {
	<-a.done
	if p := a.panicked; p != nil {
		a.panicked = nil
		panic(p)
	}
}

// waitContext waits for the work to end, as wait does, or for ctx to be
// done: then it returns ctx.Err() at once, and the work goes on to its
// end unwaited for. Work that reads through a modread.FS with the same ctx
// stops at its next read.
func (a *ahead) waitContext(ctx context.Context) error {
	select {
	case <-a.done:
		a.wait()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
