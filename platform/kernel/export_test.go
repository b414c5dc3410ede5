package kernel

import "context"

// WriteFiles lets the external tests write modules as these tests do.
var WriteFiles = writeFiles

// mustResolve returns l with its defaults, for tests with valid limits.
func (l Limits) mustResolve() Limits {
	r, err := l.resolved()
	if err != nil {
		panic(err)
	}
	return r
}

// RenderSlowly renders in as Render does, leaving out the plain read of
// an instance when loaderReads is set and the assembly of its resources
// in Go when evaluated is set: each fast path's slow twin.
func (k *Kernel) RenderSlowly(ctx context.Context, in RenderInput, loaderReads, evaluated bool) (RenderOutput, error) {
	return k.render(ctx, in, paths{loaderReads: loaderReads, evaluated: evaluated})
}

// Catalog lets the external tests look a catalog up as the kernel does.
func (p *Platform) Catalog(path string) (Catalog, bool) { return p.catalog(path) }

// Projection returns the platform a render of an instance that reads r
// reads of p under skew, as a platform module's fields: p's name, type and
// labels, and of the catalogs in the set those p carries.
func Projection(r Reads, p *Platform, skew SkewPolicy) (name, typ string, labels map[string]string, catalogs []Catalog) {
	d := r.dependencies(p, skew)
	for _, c := range d.Catalogs {
		if c.Carried {
			catalogs = append(catalogs, Catalog{Path: c.Path, Version: c.Version, Enabled: c.Enabled, Kinds: c.Kinds})
		}
	}
	return d.Name, d.Type, d.Labels, catalogs
}
