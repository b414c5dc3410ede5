package baseline

import (
	"context"
	"sync"

	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// Publisher is the platform reconcile written inline, behind one mutex:
// Write, BuildPlatform, set the record, Prune to the current and leased
// generations. It has no stale check, no identical re-publish shortcut and
// no drain before a rewrite. Set Layout and Kernel before use.
type Publisher struct {
	Layout platform.Layout
	Kernel *kernel.Kernel
	Store  Store[int64, platform.Generated]

	mu sync.Mutex
}

// Publish writes, builds and sets generation, then prunes.
func (p *Publisher) Publish(ctx context.Context, generation int64, files platformmodule.Files, skew kernel.SkewPolicy) (platform.Generated, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	dir, err := p.Layout.Write(generation, files)
	if err != nil {
		return platform.Generated{}, err
	}
	plat, err := p.Kernel.BuildPlatform(ctx, dir)
	if err != nil {
		return platform.Generated{}, err
	}
	rec := platform.Generated{Generation: generation, Dir: dir, Platform: plat, Skew: skew}
	p.Store.Set(generation, rec)
	return rec, p.Layout.Prune(append(p.Store.Leased(), generation)...)
}
