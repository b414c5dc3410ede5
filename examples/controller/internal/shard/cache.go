package shard

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"leasekit.dev/examples/controller/internal/ring"
)

// NewInformer returns a constructor of shared informers for a cache (a
// controller-runtime cache.Options.NewInformer): the informer of an
// object for which narrow reports true lists and watches only what this
// member covers (its target and its claim), and every other is
// toolscache.NewSharedIndexInformer's.
//
// Each list and watch asks the API server for the cover with
// ListOptions.ShardSelector, which a server with the ShardedListAndWatch
// feature gate honours, and keeps on the client only the objects in the
// cover, whatever the server sent: the cache holds the cover either way.
// When the cover changes, its watches end with an Expired error, so the
// informer lists again (after its backoff, from 800ms) with the new
// cover. Its first list waits until the member has joined the ring.
func (m *Member) NewInformer(narrow func(runtime.Object) bool) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return func(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, idx toolscache.Indexers) toolscache.SharedIndexInformer {
		if !narrow(obj) {
			return toolscache.NewSharedIndexInformer(lw, obj, resync, idx)
		}
		s := &sharded{m: m, lw: toolscache.ToListerWatcherWithContext(lw), watches: map[*filtered]struct{}{}}
		m.mu.Lock()
		m.covers = append(m.covers, s)
		m.mu.Unlock()
		return toolscache.NewSharedIndexInformer(s, obj, resync, idx)
	}
}

// setCover sets what the sharded informers hold, and ends their watches
// when it changed.
func (m *Member) setCover(c ring.Set) {
	m.mu.Lock()
	if m.cover.Equal(c) && m.cover != nil {
		m.mu.Unlock()
		return
	}
	first := m.cover == nil
	m.cover = c
	covers := append([]*sharded(nil), m.covers...)
	m.mu.Unlock()
	if first {
		close(m.coverSet)
		return
	}
	for _, s := range covers {
		s.restart()
	}
}

// Cover returns what the sharded informers hold, once the member joined.
func (m *Member) waitCover(ctx context.Context) (ring.Set, error) {
	select {
	case <-m.coverSet:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cover, nil
}

// setServerSide records whether the API server honoured the selector, and
// logs it the first time it is known, and each time it changes.
func (m *Member) setServerSide(honoured bool, how string) {
	m.mu.Lock()
	news := !m.serverSet || m.server != honoured
	m.serverSet, m.server = true, honoured
	m.mu.Unlock()
	if !news {
		return
	}
	if honoured {
		m.cfg.Logger.Info("sharded cache: the API server honours ListOptions.ShardSelector: this replica lists and watches only its range", "server_side", true, "found", how)
	} else {
		m.cfg.Logger.Info("sharded cache: the API server ignores ListOptions.ShardSelector (feature gate ShardedListAndWatch off): it sends every object and this replica filters on the client with the same hash", "server_side", false, "found", how)
	}
}

// sharded is a ListerWatcher narrowed to the member's cover.
type sharded struct {
	m  *Member
	lw toolscache.ListerWatcherWithContext

	mu      sync.Mutex
	watches map[*filtered]struct{}
	// listing is the cover of the list being paged; synced the cover of
	// the last whole state the informer received (a list, or a watch
	// sending its initial events). A watch from a resourceVersion with
	// another cover would miss what the new cover holds and the old one
	// did not: it ends at once, so the informer lists again.
	listing, synced ring.Set
	probing         atomic.Bool // a probe runs
}

func (s *sharded) List(o metav1.ListOptions) (runtime.Object, error) {
	return s.ListWithContext(context.Background(), o)
}

func (s *sharded) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return s.WatchWithContext(context.Background(), o)
}

// ListWithContext lists the cover, keeping only what is in it.
func (s *sharded) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	cover, err := s.m.waitCover(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if o.Continue == "" || s.listing == nil {
		s.listing = cover
	}
	cover = s.listing // every page of a list with the same selector
	s.mu.Unlock()
	o.ShardSelector = selector(cover)
	list, err := s.lw.ListWithContext(ctx, o)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.synced = cover
	s.mu.Unlock()
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	kept := items[:0]
	outside := 0
	for _, it := range items {
		if in(cover, it) {
			kept = append(kept, it)
		} else {
			outside++
		}
	}
	if err := meta.SetList(list, kept); err != nil {
		return nil, err
	}
	if sl, ok := list.(metav1.ShardedListInterface); ok && sl.GetShardInfo() != nil {
		s.m.setServerSide(true, "the list response echoed shardInfo")
	} else if outside > 0 && o.ShardSelector != "" {
		s.m.setServerSide(false, "the list response held objects outside the selector")
	}
	go s.probe(ctx)
	return list, nil
}

// probe finds out whether the API server honours the selector, unless
// known or a probe runs; each list, each watch and each round of the
// member probes until it is known. It lists one object with the selector
// of each half of the hash space: a server that ignores the selector
// answers both with the same first object, outside one of the halves; one
// that honours it answers each with an object inside it, or none. Unless
// each half answered with an object, it cannot tell. (A custom resource's list does not echo
// shardInfo: its unstructured list has no field for it.)
func (s *sharded) probe(ctx context.Context) {
	s.m.mu.Lock()
	known := s.m.serverSet
	s.m.mu.Unlock()
	if known || !s.probing.CompareAndSwap(false, true) {
		return
	}
	defer s.probing.Store(false)
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	halves := 0
	for _, half := range []ring.Set{{{Lo: 0, Hi: 1<<63 - 1}}, {{Lo: 1 << 63, Hi: ^uint64(0)}}} {
		seen := 0
		list, err := s.lw.ListWithContext(ctx, metav1.ListOptions{ShardSelector: half.Selector(), Limit: 1})
		if err != nil {
			return
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return
		}
		for _, it := range items {
			seen++
			if !in(half, it) {
				s.m.setServerSide(false, "a list with a selector held an object outside it")
				return
			}
		}
		if seen > 0 {
			halves++
		}
	}
	// Only an object from each half tells: objects created between the
	// two lists would make a server that ignores the selector look as if
	// it honoured it.
	if halves == 2 {
		s.m.setServerSide(true, "lists with the selector of each half of the space held only objects inside it")
	}
}

// WatchWithContext watches the cover, passing on only what is in it.
func (s *sharded) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	cover, err := s.m.waitCover(ctx)
	if err != nil {
		return nil, err
	}
	o.ShardSelector = selector(cover)
	w, err := s.lw.WatchWithContext(ctx, o)
	if err != nil {
		return nil, err
	}
	f := &filtered{in: w, out: make(chan watch.Event), stop: make(chan struct{}), restart: make(chan struct{})}
	s.mu.Lock()
	s.watches[f] = struct{}{}
	if ptr.Deref(o.SendInitialEvents, false) {
		s.synced = cover
	}
	behind := !s.synced.Equal(cover) || s.synced == nil
	s.mu.Unlock()
	if behind {
		f.end()
	}
	go s.probe(ctx)
	go func() {
		defer func() {
			s.mu.Lock()
			delete(s.watches, f)
			s.mu.Unlock()
		}()
		f.run(cover)
	}()
	// A watch begun after the cover changed, with the old one, ends now.
	s.m.mu.Lock()
	now := s.m.cover
	s.m.mu.Unlock()
	if !now.Equal(cover) {
		f.end()
	}
	return f, nil
}

// restart ends every watch with an Expired error, so the informer lists
// again with the new cover.
func (s *sharded) restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for f := range s.watches {
		f.end()
	}
}

// selector returns the shard selector of c, every range OR-ed, or "" (no
// selector: the client's filter alone narrows) for a cover of more ranges
// than the API server accepts (ring.MaxSelectorRanges; a target has at
// most 128, and a cover is a target and a claim).
func selector(c ring.Set) string {
	if len(c) > ring.MaxSelectorRanges {
		return ""
	}
	return c.Selector()
}

// in reports whether obj's UID hashes into c.
func in(c ring.Set, obj runtime.Object) bool {
	a, err := meta.Accessor(obj)
	if err != nil {
		return true // not an object: a bookmark, an error: pass it on
	}
	if a.GetUID() == "" {
		return true
	}
	return c.Contains(ring.Hash(string(a.GetUID())))
}

// filtered passes on the events of in for objects in the cover, until it
// is stopped, in ends, or end makes it send an Expired error.
type filtered struct {
	in       watch.Interface
	out      chan watch.Event
	stop     chan struct{}
	restart  chan struct{}
	stopOnce sync.Once
	endOnce  sync.Once
}

func (f *filtered) ResultChan() <-chan watch.Event { return f.out }

func (f *filtered) Stop() { f.stopOnce.Do(func() { close(f.stop) }) }

func (f *filtered) end() { f.endOnce.Do(func() { close(f.restart) }) }

func (f *filtered) run(cover ring.Set) {
	defer close(f.out)
	defer f.in.Stop()
	expire := func() {
		select {
		case f.out <- watch.Event{Type: watch.Error, Object: &metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
			Message: "the ring's cover changed: list again",
		}}:
		case <-f.stop:
		}
	}
	for {
		select {
		case <-f.stop:
			return
		case <-f.restart:
			expire()
			return
		case ev, ok := <-f.in.ResultChan():
			if !ok {
				return
			}
			if ev.Type != watch.Bookmark && ev.Type != watch.Error && !in(cover, ev.Object) {
				continue
			}
			select {
			case f.out <- ev:
			case <-f.stop:
				return
			case <-f.restart:
				expire() // the event is dropped: the list that follows has it
				return
			}
		}
	}
}
