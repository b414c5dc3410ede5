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
