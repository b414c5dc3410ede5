package platform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"leasekit.dev/platform/kernel"
	"leasekit.dev/publish"
)

// DefaultMemoBudget is the most bytes a [Publisher]'s render memo
// accounts for when [PublisherOptions].MemoBudget is zero: 32 MiB, some
// six thousand renders of ten components. An entry is accounted at the
// length of its output's encoding ([kernel.RenderOutput.MarshalBinary])
// plus its key's; the memo holds the output itself, whose maps take a few
// times that length on the heap, and a hit clones them.
const DefaultMemoBudget = 32 << 20

// A RenderKey is everything the result of a [Publisher.Render] is a
// function of: the leased record's identity and directory, the digest of
// the instance's files and the name its errors give it, the skew policy,
// the evaluator's Limits and the version of this module. Renders with equal
// keys give byte-identical results; it is the key of the Publisher's
// render memo. A RenderKey is comparable.
//
// A controller that records a key in status, to tell whether a render's
// inputs changed across restarts, adds what the key cannot know: its own
// version, and anything its reconciler adds to the rendered resources.
type RenderKey struct {
	Platform    publish.Identity[int64] // the leased record's identity: generation and module digest
	PlatformDir string                  // the leased record's directory
	Instance    string                  // the [kernel.Digest] of the instance's Files, or of what was read of its Dir ([kernel.InstanceSnapshot.Digest]); InstanceDir tells the two apart
	InstanceDir string                  // the name its errors give the instance ([kernel.InstanceSnapshot.Dir])
	Skew        kernel.SkewPolicy
	Limits      kernel.Limits // as the Evaluator holds them (Bounds): a zero field means its default
	Version     string        // of leasekit.dev/platform in the binary; "(devel)" when not known
}

// String returns k as one line of text, such as
// "platform=7@sha256:… dir="/var/lib/op/gen-7" instance=sha256:…
// instance-dir="instance" skew=Warn limits=0/0/0/0/0 version=v0.3.1":
// equal keys, equal strings.
func (k RenderKey) String() string {
	l := k.Limits
	return fmt.Sprintf("platform=%s dir=%q instance=%s instance-dir=%q skew=%s limits=%d/%d/%d/%d/%d version=%s",
		k.Platform, k.PlatformDir, k.Instance, k.InstanceDir, k.Skew,
		l.MaxFileSize, l.MaxTotalSize, l.MaxFiles, l.MaxDepth, l.MaxComponents, k.Version)
}

// moduleVersion is the version of leasekit.dev/platform the binary was
// built with, "(devel)" when it is not known.
var moduleVersion = sync.OnceValue(func() string {
	const path = "leasekit.dev/platform"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	mods := append([]*debug.Module{&bi.Main}, bi.Deps...)
	for _, m := range mods {
		if m.Replace != nil && m.Path == path {
			m = m.Replace
		}
		if m.Path == path && m.Version != "" {
			return m.Version
		}
	}
	return "(devel)"
})

// MemoStats describes a Publisher's render memo.
type MemoStats struct {
	Hits      uint64 // renders answered from the memo
	Misses    uint64 // renders that evaluated, or waited for an identical evaluation
	Shared    uint64 // of Misses, those that waited for an identical evaluation another render had started
	Evictions uint64 // entries evicted, least recently used first, so that the accounted bytes fit Budget
	Dropped   uint64 // entries dropped because the identity they rendered against was reclaimed
	Entries   int    // entries held
	Bytes     int64  // bytes accounted for the entries held: the length of each output's encoding (kernel.RenderOutput.MarshalBinary), or of an error's text, plus its key's
	Budget    int64  // the most Bytes may reach; 0 when the memo is off
}

// An entry is one render's result: never handed out, only copies of it.
type entry struct {
	out        kernel.RenderOutput // the render's output, which only the memo holds
	err        error
	encoded    json.RawMessage // a memoizable err, as kernel.EncodeError encodes it
	size       int64           // accounted bytes; set for a memoizable result
	memoizable bool
	cancelled  bool // err is the cancellation of the evaluation's own context
}

// result returns e's result for one caller: its output cloned
// ([kernel.RenderOutput.Clone]), so that no two callers share a map, a
// memoizable error decoded afresh; any other error as it is.
func (e *entry) result() (kernel.RenderOutput, error) {
	switch {
	case e.err == nil:
		return e.out.Clone(), nil
	case e.memoizable:
		return kernel.RenderOutput{}, kernel.DecodeError(e.encoded)
	}
	return kernel.RenderOutput{}, e.err
}

// newEntry returns the entry of a render of key that gave out and err.
// An output is memoizable when it encodes (MarshalBinary), as every
// Kernel's does, and accounted at its encoding's length.
func newEntry(key RenderKey, out kernel.RenderOutput, err error) *entry {
	e := &entry{out: out, err: err}
	var n int
	switch {
	case err != nil:
		// An error about the instance's content is a function of the
		// key: kept, as plain data a hit decodes afresh.
		if !kernel.IsContent(err, key.InstanceDir) {
			return e
		}
		e.encoded = kernel.EncodeError(err)
		n = len(err.Error())
	default:
		data, merr := out.MarshalBinary()
		if merr != nil {
			return e
		}
		n = len(data)
	}
	e.memoizable = true
	e.size = int64(n + len(key.String()))
	return e
}

// identityEntries are the evaluations against one identity still running.
type identityEntries struct {
	pending int  // evaluations begun and not yet finished
	gone    bool // reclaimed: nothing more is stored for it
}

// A flight is one evaluation of a key that renders wait for: it runs on
// a goroutine of its own, on a context of its own that its last waiter
// to leave cancels.
type flight struct {
	ctx     context.Context
	cancel  context.CancelFunc
	ie      *identityEntries
	waiters int           // under the memo's mu
	done    chan struct{} // closed once the fields below are set
	e       *entry        // the result; nil when the evaluation panicked
	panic   any           // what the evaluation panicked with
}

// A memo is a Publisher's render memo: an LRU of results bounded by
// accounted bytes, the evaluations running by identity, and the flights
// that evaluate misses once.
type memo struct {
	budget int64 // 0: nothing is stored

	mu         sync.Mutex
	lru        *simplelru.LRU[RenderKey, *entry]
	bytes      int64
	identities map[publish.Identity[int64]]*identityEntries
	flights    map[RenderKey]*flight // the flights that renders may join
	stats      MemoStats
}

func newMemo(budget int64) *memo {
	m := &memo{identities: map[publish.Identity[int64]]*identityEntries{}, flights: map[RenderKey]*flight{}}
	if budget > 0 {
		m.budget = budget
		// The LRU counts no bytes: its size is never the bound, the
		// budget is, and evict keeps to it.
		m.lru, _ = simplelru.NewLRU[RenderKey, *entry](math.MaxInt, nil)
	}
	return m
}

// lookup returns key's entry, if the memo holds it, counting a hit or a
// miss.
func (m *memo) lookup(key RenderKey) (*entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lru != nil {
		if e, ok := m.lru.Get(key); ok {
			m.stats.Hits++
			return e, true
		}
	}
	m.stats.Misses++
	return nil, false
}

// bypass counts a miss of a render that the memo cannot hold.
func (m *memo) bypass() {
	m.mu.Lock()
	m.stats.Misses++
	m.mu.Unlock()
}

// evaluate returns the result of key's evaluation by eval, run once for
// every render of key that waits for it at once, on a context of its own
// that is cancelled when its last waiter leaves. It returns ctx.Err() as
// soon as ctx is done. When eval panics, every render waiting for it
// panics, each in its own goroutine, with the value eval panicked with;
// nothing is stored, and the next render of key evaluates again.
func (m *memo) evaluate(ctx context.Context, key RenderKey, eval func(context.Context) (kernel.RenderOutput, error)) (kernel.RenderOutput, error) {
	for {
		f := m.join(ctx, key, eval)
		select {
		case <-f.done:
			m.leave(key, f)
			if f.e == nil {
				panic(f.panic)
			}
			if f.e.cancelled && ctx.Err() == nil {
				continue // cancelled by waiters who left, not by this one
			}
			return f.e.result()
		case <-ctx.Done():
			m.leave(key, f)
			return kernel.RenderOutput{}, ctx.Err()
		}
	}
}

// join returns key's flight, starting one if none runs.
func (m *memo) join(ctx context.Context, key RenderKey, eval func(context.Context) (kernel.RenderOutput, error)) *flight {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.flights[key]
	if f != nil {
		m.stats.Shared++
		f.waiters++
		return f
	}
	f = &flight{ie: m.begin(key.Platform), waiters: 1, done: make(chan struct{})}
	f.ctx, f.cancel = context.WithCancel(context.WithoutCancel(ctx))
	m.flights[key] = f
	go m.run(key, f, eval)
	return f
}

// run is f's evaluation. It stores the result if it may, and ends f; a
// panic of eval ends f with the panic's value, and stores nothing.
func (m *memo) run(key RenderKey, f *flight, eval func(context.Context) (kernel.RenderOutput, error)) {
	var e *entry
	panicked := true
	defer func() {
		var v any
		if panicked {
			v = recover()
		}
		m.mu.Lock()
		m.finish(key, f.ie, e)
		if m.flights[key] == f {
			delete(m.flights, key)
		}
		f.e, f.panic = e, v
		m.mu.Unlock()
		close(f.done)
	}()
	out, err := eval(f.ctx)
	e = newEntry(key, out, err)
	e.cancelled = err != nil && f.ctx.Err() != nil && errors.Is(err, context.Canceled)
	panicked = false
}

// leave records that a waiter of f left; the last one cancels f's
// evaluation, which no render joins any more.
func (m *memo) leave(key RenderKey, f *flight) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f.waiters--; f.waiters > 0 {
		return
	}
	if m.flights[key] == f {
		delete(m.flights, key)
	}
	f.cancel()
}

// begin records an evaluation against id beginning. m.mu is held.
func (m *memo) begin(id publish.Identity[int64]) *identityEntries {
	ie := m.identities[id]
	if ie == nil {
		ie = &identityEntries{}
		m.identities[id] = ie
	}
	ie.pending++
	return ie
}

// finish records an evaluation of key against ie's identity ending with
// e (nil: it panicked), and stores e if it may. m.mu is held.
func (m *memo) finish(key RenderKey, ie *identityEntries, e *entry) {
	if ie.pending--; ie.pending == 0 && m.identities[key.Platform] == ie {
		delete(m.identities, key.Platform)
	}
	if e == nil || !e.memoizable || ie.gone || m.lru == nil || e.size > m.budget {
		return
	}
	if old, ok := m.lru.Peek(key); ok {
		m.bytes -= old.size
	}
	m.lru.Add(key, e)
	m.bytes += e.size
	for m.bytes > m.budget { // least recently used first
		_, old, ok := m.lru.RemoveOldest()
		if !ok {
			break
		}
		m.bytes -= old.size
		m.stats.Evictions++
	}
}

// drop removes every entry that rendered against id, and stores none of
// the evaluations against it still running. It looks at every entry: a
// reclaim is rare beside renders, and an index by identity would hold a
// third copy of each key.
func (m *memo) drop(id publish.Identity[int64]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if ie := m.identities[id]; ie != nil {
		ie.gone = true
		delete(m.identities, id)
	}
	if m.lru == nil {
		return
	}
	for _, k := range m.lru.Keys() {
		if k.Platform != id {
			continue
		}
		if e, ok := m.lru.Peek(k); ok {
			m.bytes -= e.size
			m.lru.Remove(k)
			m.stats.Dropped++
		}
	}
}

// snapshot returns the memo's stats.
func (m *memo) snapshot() MemoStats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.Bytes, s.Budget = m.bytes, m.budget
	if m.lru != nil {
		s.Entries = m.lru.Len()
	}
	return s
}

// filesDir is the name a render's errors give an instance given as Files.
const filesDir = "instance"
