package ring

import (
	"context"
	"sync"
	"time"
)

// A Gate says whether this member writes for a hash now, and counts the
// holds in flight so that a part is handed over only once none is left
// there. The zero Gate writes for nothing and renders nothing. It is safe
// for concurrent use.
type Gate struct {
	mu       sync.Mutex
	target   Set
	writing  Set
	deadline time.Time // writes stop at this instant; zero: no write
	inflight map[uint64]int
	changed  chan struct{} // closed and replaced when a hold ends
}

// A Hold is one reconcile's hold on a hash, from [Gate.Hold] to
// [Hold.Done].
type Hold struct {
	g    *Gate
	hash uint64
	once sync.Once
}

// Hold takes a hold on hash for one reconcile, counted until [Hold.Done].
// It never blocks.
func (g *Gate) Hold(hash uint64) *Hold {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inflight == nil {
		g.inflight = make(map[uint64]int)
	}
	g.inflight[hash]++
	return &Hold{g: g, hash: hash}
}

// Writes reports whether the member writes for the held hash now: it is
// in the part the member claimed and validated, and the member's Lease
// was renewed recently enough (before the deadline of [Gate.Set]). Call
// it right before each write: a write that follows a true answer lands
// within the margin between that deadline and the Lease's expiry, or its
// resourceVersion refuses it.
func (h *Hold) Writes() bool {
	g := h.g
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.writing.Contains(h.hash) && time.Now().Before(g.deadline)
}

// Renders reports whether the held hash is in the member's target or in
// what it writes for: a member renders the Releases of its target before
// it may write for them, so that the handover writes and renders nothing.
func (h *Hold) Renders() bool {
	g := h.g
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.writing.Contains(h.hash) || g.target.Contains(h.hash)
}

// Done ends the hold; calls after the first do nothing.
func (h *Hold) Done() {
	h.once.Do(func() {
		g := h.g
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.inflight[h.hash]--; g.inflight[h.hash] <= 0 {
			delete(g.inflight, h.hash)
		}
		if g.changed != nil {
			close(g.changed)
			g.changed = nil
		}
	})
}

// Set sets the member's target, the part it writes for, and the instant
// its writes stop unless Set moves it again (the last renewal of its
// Lease plus the renew deadline). It returns what writing gained and
// lost against the part before.
func (g *Gate) Set(target, writing Set, deadline time.Time) (gained, lost Set) {
	g.mu.Lock()
	defer g.mu.Unlock()
	gained, lost = writing.Minus(g.writing), g.writing.Minus(writing)
	g.target, g.writing, g.deadline = target, writing, deadline
	return gained, lost
}

// Writing returns the part the member writes for and its target.
func (g *Gate) Writing() (writing, target Set) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.writing, g.target
}

// Drain blocks until no hold on a hash in part is left, and returns nil;
// or returns ctx's error once ctx ends first. New holds may be taken
// meanwhile: stop writing for part first ([Gate.Set]), so that those
// never write.
func (g *Gate) Drain(ctx context.Context, part Set) error {
	for {
		g.mu.Lock()
		busy := false
		for h := range g.inflight {
			if part.Contains(h) {
				busy = true
				break
			}
		}
		if !busy {
			g.mu.Unlock()
			return nil
		}
		if g.changed == nil {
			g.changed = make(chan struct{})
		}
		ch := g.changed
		g.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
