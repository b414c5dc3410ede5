package platform

import (
	"context"
	"slices"

	"leasekit.dev/platform/kernel"
	"leasekit.dev/publish"
)

// ReclaimNow runs one step of the reclaim loop: what Run does when woken.
func (p *Publisher) ReclaimNow() []ReclaimEvent { return p.pub.Reclaim() }

// SetEval replaces the evaluation of a render that misses the memo
// (after admission); call it before the first render.
func (p *Publisher) SetEval(eval func(context.Context, kernel.RenderInput) (kernel.RenderOutput, error)) {
	p.evaluator = seam{Evaluator: p.evaluator, render: eval}
}

// SetRead replaces the read of an instance; call it before the first
// render.
func (p *Publisher) SetRead(read func(context.Context, kernel.Instance) (*kernel.InstanceSnapshot, error)) {
	p.evaluator = seam{Evaluator: p.evaluator, read: read}
}

// A seam is an Evaluator with its render or its read replaced.
type seam struct {
	Evaluator
	render func(context.Context, kernel.RenderInput) (kernel.RenderOutput, error)
	read   func(context.Context, kernel.Instance) (*kernel.InstanceSnapshot, error)
}

func (s seam) Render(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error) {
	if s.render == nil {
		return s.Evaluator.Render(ctx, in)
	}
	return s.render(ctx, in)
}

func (s seam) ReadInstance(ctx context.Context, in kernel.Instance) (*kernel.InstanceSnapshot, error) {
	if s.read == nil {
		return s.Evaluator.ReadInstance(ctx, in)
	}
	return s.read(ctx, in)
}

// MemoIdentities returns the identities whose directories the memo's
// entries name.
func (p *Publisher) MemoIdentities() []publish.Identity[int64] {
	p.memo.mu.Lock()
	defer p.memo.mu.Unlock()
	var ids []publish.Identity[int64]
	if p.memo.lru != nil {
		for _, e := range p.memo.lru.Values() {
			if id := e.bound.Identity; id != (publish.Identity[int64]{}) && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return ids
}

// MemoPending returns the number of identities the memo tracks
// evaluations of.
func (p *Publisher) MemoPending() int {
	p.memo.mu.Lock()
	defer p.memo.mu.Unlock()
	return len(p.memo.identities)
}

// MemoFlights returns the number of flights the memo tracks.
func (p *Publisher) MemoFlights() int {
	p.memo.mu.Lock()
	defer p.memo.mu.Unlock()
	return len(p.memo.flights)
}
