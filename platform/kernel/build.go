package kernel

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
)

// A Platform is what BuildPlatform decoded from a platform module.
type Platform struct {
	Name     string            // the platform's name, a DNS label
	Type     string            // its type; "standard" unless the module says otherwise
	Module   string            // the module path of its cue.mod/module.cue
	Labels   map[string]string // labels added to every rendered resource
	Catalogs []Catalog         // the catalogs it carries, ordered by path

	// Dir is the absolute directory the platform was built from: its
	// source, which every Render loads again.
	Dir string

	// Digest binds the platform to the content it was built from: a
	// [Digest] of every file the build read from Dir, taken from the
	// bytes as they were read. Those are the files the CUE loader reads:
	// the module file, the package's CUE files, the CUE files it then
	// leaves out (such as _x.cue or x_tool.cue) and the data files beside
	// them (.json, .yaml, .txt, ...); not files of other kinds, such as a
	// README.md. A Render refuses,
	// with a *ContentError, to render against a Dir that no longer holds
	// that content; a Platform with no Digest cannot be rendered against.
	Digest string

	// built is what the build decoded, bound to Digest: a render of
	// unchanged content uses it instead of evaluating the module again.
	built *builtPlatform

	size int64 // bytes of the files the build read
}

// Size returns the bytes of the files BuildPlatform read to build p: what
// a render reads of the platform's directory again. It is 0 for a
// Platform that BuildPlatform did not return.
func (p *Platform) Size() int64 { return p.size }

// A Catalog is one component catalog a platform carries. Its Version is a
// semantic version as Semantic Versioning 2.0.0 writes it, with or without
// a leading 'v': "1.4.2" equals "v1.4.2", a prerelease is older than its
// release and build metadata is ignored. Every result carries a version
// as its module wrote it.
type Catalog struct {
	Path    string   // CUE module path with major version
	Version string   // semantic version, with or without a leading 'v', as the module writes it
	Enabled bool     // whether instances may use it
	Kinds   []string // the component kinds it provides, sorted; empty: any kind
}

// catalog returns the catalog of p with the given path, and whether p
// carries one.
func (p *Platform) catalog(path string) (Catalog, bool) {
	i, ok := slices.BinarySearchFunc(p.Catalogs, path, func(c Catalog, path string) int {
		return strings.Compare(c.Path, path)
	})
	if !ok {
		return Catalog{}, false
	}
	return p.Catalogs[i], true
}

// defaultType is a platform's type when its module sets none.
const defaultType = "standard"

// BuildPlatform loads the platform module at dir and returns the platform
// it describes, bound to the content it was read from (see
// Platform.Digest). The module is loaded with no registry
// (CUE_REGISTRY=none) and no process environment, so a build never touches
// the network; a module that declares dependencies is refused. The
// platform package is unified with the kernel's #Platform schema and
// validated concretely, definitions included.
//
// The directory is read through an os.Root: a file that is not regular or
// a symbolic link leading out of it fails the build with a *FileError, and
// input past the Kernel's Limits with a *LimitError, before anything is
// parsed. Any other problem is reported in one *Error with its file
// positions. BuildPlatform reads on a goroutine of its own; when ctx is
// done it returns ctx.Err() at once, even while a read is blocked, and
// that goroutine reads nothing more once its current read returns.
func (k *Kernel) BuildPlatform(ctx context.Context, dir string) (*Platform, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	limits, err := k.limits()
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Platform, error) { return nil, moduleError("build", abs, err) }
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m, err := loadAside(ctx, func() (loadedModule, error) { return loadDir(ctx, limits, abs) })
	if err != nil {
		return fail(err)
	}
	cc := cuecontext.New()
	v, err := buildPackage(ctx, cc, m.inst)
	if err != nil {
		return fail(err)
	}
	bi, err := vocabulary(platformVocabulary)
	if err != nil {
		return nil, err
	}
	schema, err := compileSchema(cc, bi)
	if err != nil {
		return nil, err
	}
	p, forms, err := decodePlatform(ctx, cc, schema, v)
	if err != nil {
		return nil, asError("build", abs, err, source{[]string{"#Platform"}, v})
	}
	p.Module, p.Dir, p.Digest, p.size = m.info.Path, abs, m.digest, m.size
	p.built = sealPlatform(p, m.digest)
	p.built.platformForms = forms
	return p, nil
}

// validate validates v concretely, and each of its definitions too: a
// top-level Validate skips definitions.
func validate(v cue.Value) error {
	err := v.Validate(cue.Concrete(true), cue.Final())
	iter, ierr := v.Fields(cue.Definitions(true))
	if ierr != nil {
		return joinCUE(err, ierr)
	}
	for iter.Next() {
		if iter.Selector().IsDefinition() {
			err = joinCUE(err, iter.Value().Validate(cue.Concrete(true), cue.Final()))
		}
	}
	return err
}

type platformData struct {
	Name     string            `json:"name"`
	Type     string            `json:"type"`
	Labels   map[string]string `json:"labels"`
	Catalogs map[string]struct {
		Version string   `json:"version"`
		Enabled *bool    `json:"enabled"` // nil: true
		Kinds   []string `json:"kinds"`
	} `json:"catalogs"`
}

// decodePlatform gates v on the #Platform shape, checks its values and
// decodes it, and returns how it writes what a render reads of it.
func decodePlatform(ctx context.Context, cc *cue.Context, schema, v cue.Value) (*Platform, platformForms, error) {
	u := schema.LookupPath(cue.MakePath(cue.Def("#Platform"))).Unify(v)
	if err := joinCUE(validate(u), checkPlatformValues(cc, v, u)); err != nil {
		return nil, platformForms{}, err
	}
	if err := ctx.Err(); err != nil {
		return nil, platformForms{}, err
	}
	data, err := u.MarshalJSON()
	if err != nil {
		return nil, platformForms{}, err
	}
	var d platformData
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, platformForms{}, err
	}
	// The schema leaves defaults out: a disjunction with a default costs
	// more to evaluate than the rest of a platform.
	p := &Platform{Name: d.Name, Type: d.Type, Labels: d.Labels}
	if p.Type == "" {
		p.Type = defaultType
	}
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	for path, c := range d.Catalogs {
		kinds := slices.Compact(slices.Sorted(slices.Values(c.Kinds)))
		enabled := c.Enabled == nil || *c.Enabled
		p.Catalogs = append(p.Catalogs, Catalog{Path: path, Version: c.Version, Enabled: enabled, Kinds: kinds})
	}
	slices.SortFunc(p.Catalogs, func(a, b Catalog) int { return strings.Compare(a.Path, b.Path) })
	return p, writtenForms(v, u), nil
}

// A builtPlatform is what BuildPlatform decoded from a platform module,
// as a render needs it, bound to the digest of the content it was decoded
// from. BuildPlatform keeps it beside the Platform's exported fields,
// which a caller may change: a render whose platform directory holds that
// content renders with it rather than evaluating the module again. It is
// plain data and never changes once built.
type builtPlatform struct {
	digest   string
	name     string
	typ      string            // defaulted
	labels   map[string]string // the platform's labels
	versions map[string]string // catalog path to version, as written

	platformForms
}

// platformForms is what a render reads of how a platform module writes
// its name, type and labels, beyond the strings they decode to: whether
// it sets a type (#Render supplies "standard" itself otherwise, at no
// position in the module), and whether the package, its name, type,
// labels and each label are plain, with no default, so that #Render
// unifies each as the string it decodes to. An instance's label unifies
// with the platform's: a string conflicts with another, a default gives
// way to it.
type platformForms struct {
	typeSet bool
	plain   bool
}

// writtenForms returns the forms of the platform v, as u, v under
// #Platform, holds its values.
func writtenForms(v, u cue.Value) platformForms {
	hasDefault := func(x cue.Value) bool { _, ok := x.Default(); return ok }
	f := platformForms{typeSet: lookup(u, "type").Exists(), plain: !hasDefault(v) && !hasDefault(u)}
	for _, path := range []string{"name", "type", "labels"} {
		if x := lookup(u, path); x.Exists() && hasDefault(x) {
			f.plain = false
		}
	}
	for _, x := range structFields(lookup(u, "labels")) {
		if hasDefault(x) {
			f.plain = false
		}
	}
	return f
}

// builtFrom reports whether p holds what BuildPlatform decoded from the
// content of digest, as p's Digest says it was built from.
func (p *Platform) builtFrom(digest string) bool {
	return p.built != nil && p.built.digest == digest && p.Digest == digest
}

// sealPlatform returns what a render needs of p, built from the content
// of digest.
func sealPlatform(p *Platform, digest string) *builtPlatform {
	b := &builtPlatform{digest: digest, name: p.Name, typ: p.Type,
		labels: maps.Clone(p.Labels), versions: make(map[string]string, len(p.Catalogs))}
	for _, c := range p.Catalogs {
		b.versions[c.Path] = c.Version
	}
	return b
}
