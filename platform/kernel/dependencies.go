package kernel

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"maps"
	"slices"
	"strings"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/parser"

	"leasekit.dev/platform/kernel/internal/modread"
)

// Reads is what a render of one instance reads of its platform's
// catalogs, known from the instance's files without evaluating them: the
// paths its requires field names, or every catalog when its files do not
// tell. The zero Reads is every catalog. A Reads is immutable and safe to
// share between goroutines.
type Reads struct {
	catalogs []string // sorted, without repeats; nil unless known
	known    bool
}

// Catalogs returns the catalog paths a render of the instance reads of
// its platform, sorted, and whether they are known; when they are not,
// the render may read every catalog.
func (r Reads) Catalogs() (paths []string, known bool) { return slices.Clone(r.catalogs), r.known }

// ReadsOf returns what a render of the instance module with files reads
// of its platform's catalogs. It parses the module's CUE files at its
// root and evaluates nothing: it costs a parse, linear in the files'
// bytes.
//
// A render checks the catalogs its requires field names (checkCatalogs)
// and reads, in #Render, only those its components use, which must be
// among them; so the catalogs it reads are the fields of requires. Those
// are known when every file declares requires, if at all, as a struct of
// fields with plain labels ("example.com/catalogs/web@v1": "v1.2.0" or a
// shorthand of it), and adds fields to the package in no other way that
// could reach it: no embedding, comprehension, pattern constraint or
// dynamic label at the top of a file, none in requires, no attribute on
// requires. Otherwise, and for a file that does not parse or nests deeper
// than the default MaxDepth, ReadsOf returns every catalog: a superset,
// never less than a render reads.
func ReadsOf(files map[string][]byte) Reads {
	var paths []string
	for name, src := range files {
		if strings.Contains(name, "/") || !strings.HasSuffix(name, ".cue") {
			continue // not in the package at the module's root
		}
		if depth, _ := modread.Depth(src, defaultMaxDepth); depth > defaultMaxDepth {
			return Reads{}
		}
		f, err := parser.ParseFile(name, src)
		if err != nil {
			return Reads{}
		}
		more, ok := requiredPaths(f)
		if !ok {
			return Reads{}
		}
		paths = append(paths, more...)
	}
	slices.Sort(paths)
	return Reads{catalogs: slices.Compact(paths), known: true}
}

// Reads returns what a render of s reads of its platform's catalogs:
// ReadsOf of the files s holds.
func (s *InstanceSnapshot) Reads() Reads { return ReadsOf(s.files) }

// requiredPaths returns the labels of the fields of requires that f
// declares, and false when f may add fields to requires in a way a parse
// cannot tell.
func requiredPaths(f *ast.File) ([]string, bool) {
	var paths []string
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.Package, *ast.ImportDecl, *ast.Attribute, *ast.CommentGroup, *ast.LetClause:
		case *ast.Field:
			name, _, err := ast.LabelName(d.Label)
			if err != nil {
				return nil, false // a pattern constraint or a dynamic label
			}
			if name != "requires" {
				continue
			}
			more, ok := structLabels(d)
			if !ok {
				return nil, false
			}
			paths = append(paths, more...)
		default: // an embedding, a comprehension, anything else
			return nil, false
		}
	}
	return paths, true
}

// structLabels returns the labels of the fields of requires, the field d,
// and false unless its value is a struct of fields with plain labels.
func structLabels(d *ast.Field) ([]string, bool) {
	s, ok := d.Value.(*ast.StructLit)
	if !ok || len(d.Attrs) > 0 {
		return nil, false
	}
	var paths []string
	for _, e := range s.Elts {
		switch e := e.(type) {
		case *ast.CommentGroup, *ast.LetClause, *ast.Attribute, *ast.Ellipsis:
		case *ast.Field:
			if _, pattern := e.Label.(*ast.ListLit); pattern {
				continue // constrains the fields, adds none
			}
			name, _, err := ast.LabelName(e.Label)
			if err != nil {
				return nil, false
			}
			paths = append(paths, name)
		default:
			return nil, false
		}
	}
	return paths, true
}

// A dependencySet is everything a render reads of its platform, the one
// statement of it: the platform's name, type and labels, the skew policy,
// and for each catalog the render reads, whether the platform carries it,
// its version, whether it is enabled and its kinds. render.cue and
// checkCatalogs read nothing else of a platform (a test renders against
// the platform projected to this set and requires the same result), save
// the positions of the platform module's files, which name its directory:
// a result that names them depends on that directory too (see
// [Reads.Dependencies]).
type dependencySet struct {
	Name     string
	Type     string
	Labels   map[string]string
	Skew     SkewPolicy
	Every    bool // the instance's reads are not known: Catalogs holds every catalog
	Catalogs []catalogRead
}

// A catalogRead is what a render reads of one catalog.
type catalogRead struct {
	Path    string
	Carried bool
	Version string
	Enabled bool
	Kinds   []string
}

// digest returns the digest of d: SHA-256 over each of its fields in
// order, every string and list preceded by its length, the labels sorted
// by key.
func (d dependencySet) digest() string {
	h := sha256.New()
	var buf []byte
	str := func(s string) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		buf = append(buf, s...)
	}
	flag := func(b bool) {
		if b {
			buf = append(buf, 1)
		} else {
			buf = append(buf, 0)
		}
	}
	str("leasekit.dev/platform/kernel dependencies v1")
	str(d.Name)
	str(d.Type)
	buf = binary.AppendUvarint(buf, uint64(len(d.Labels)))
	for _, k := range slices.Sorted(maps.Keys(d.Labels)) {
		str(k)
		str(d.Labels[k])
	}
	buf = binary.AppendUvarint(buf, uint64(d.Skew))
	flag(d.Every)
	buf = binary.AppendUvarint(buf, uint64(len(d.Catalogs)))
	for _, c := range d.Catalogs {
		str(c.Path)
		flag(c.Carried)
		str(c.Version)
		flag(c.Enabled)
		buf = binary.AppendUvarint(buf, uint64(len(c.Kinds)))
		for _, k := range c.Kinds {
			str(k)
		}
	}
	h.Write(buf)
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// dependencies returns the set a render of an instance that reads r
// reads of p under skew.
func (r Reads) dependencies(p *Platform, skew SkewPolicy) dependencySet {
	d := dependencySet{Name: p.Name, Type: p.Type, Labels: p.Labels, Skew: skew, Every: !r.known}
	read := func(c Catalog) catalogRead {
		return catalogRead{Path: c.Path, Carried: true, Version: c.Version, Enabled: c.Enabled, Kinds: c.Kinds}
	}
	if !r.known {
		for _, c := range p.Catalogs {
			d.Catalogs = append(d.Catalogs, read(c))
		}
		return d
	}
	for _, path := range r.catalogs {
		c, ok := p.catalog(path)
		if !ok {
			d.Catalogs = append(d.Catalogs, catalogRead{Path: path})
			continue
		}
		d.Catalogs = append(d.Catalogs, read(c))
	}
	return d
}

// Dependencies returns the digest of what a render of an instance that
// reads r reads of p under skew: "sha256:" and 64 hexadecimal digits over
// the platform's name, type and labels, the skew policy, and each catalog
// r names (every catalog when r does not know): whether p carries it,
// its version, whether it is enabled, its kinds. Renders of one instance
// against platforms with equal Dependencies give the same result, unless
// that result names the platform's directory or files (an error at a
// position in the platform module), which then depends on the directory
// too. It evaluates nothing.
func (r Reads) Dependencies(p *Platform, skew SkewPolicy) string {
	return r.dependencies(p, skew).digest()
}
