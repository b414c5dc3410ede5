package platform

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"runtime/debug"
	"strings"
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
// function of: the digest of what the render reads of the platform (its
// dependency set, the skew policy included), the digest of the instance's
// files and the name its errors give it, the evaluator's Limits and the
// version of this module. Renders with equal keys give byte-identical
// results, against any generation; it is the key of the Publisher's
// render memo. A RenderKey is comparable.
//
// A new platform generation changes a key only where it changes what the
// render reads: bumping a catalog the instance does not require leaves
// its key, and its memo entry, as they were. A result that names the
// platform's directory or files (an error at a position in the platform
// module) depends on that directory too: its key's Dependencies includes
// it, so that such a key equals no key [Publisher.Key] computes, nor one
// of another directory.
//
// A controller that records a key in status, to tell whether a render's
// inputs changed across restarts, adds what the key cannot know: its own
// version, and anything its reconciler adds to the rendered resources.
type RenderKey struct {
	Dependencies string        // "sha256:" and hex: [kernel.Reads.Dependencies] of the leased platform, with its directory when the result names it
	Instance     string        // the [kernel.Digest] of the instance's Files, or of what was read of its Dir ([kernel.InstanceSnapshot.Digest]); InstanceDir tells the two apart
	InstanceDir  string        // the name its errors give the instance ([kernel.InstanceSnapshot.Dir])
	Limits       kernel.Limits // as the Evaluator holds them (Bounds): a zero field means its default
	Version      string        // of leasekit.dev/platform in the binary; "(devel)" when not known
}

// String returns k as one line of text, such as
// "dependencies=sha256:… instance=sha256:… instance-dir="instance"
// limits=0/0/0/0/0 version=v0.3.1": equal keys, equal strings.
func (k RenderKey) String() string {
	l := k.Limits
	return fmt.Sprintf("dependencies=%s instance=%s instance-dir=%q limits=%d/%d/%d/%d/%d version=%s",
		k.Dependencies, k.Instance, k.InstanceDir,
		l.MaxFileSize, l.MaxTotalSize, l.MaxFiles, l.MaxDepth, l.MaxComponents, k.Version)
}

// boundKey returns key for a result that names rec's directory: its
// Dependencies digests key's with rec's identity and directory, so that
// it equals no key of another directory, nor any key not so bound.
func boundKey(key RenderKey, rec Generated) RenderKey {
	sum := sha256.Sum256([]byte("bound\x00" + key.Dependencies + "\x00" + rec.Identity.String() + "\x00" + rec.Dir))
	key.Dependencies = "sha256:" + hex.EncodeToString(sum[:])
	return key
}

// namesPlatform reports whether a render's error against rec, said by texts, names
// the platform's directory or a file in it: a position in the platform
// module, which a render's errors give as a path under its directory (the
// directory's own name at least, whatever the instance's directory).
func namesPlatform(rec Generated, texts ...string) bool {
	for _, dir := range []string{rec.Dir, platformDir(rec)} {
		for _, text := range texts {
			if dir != "" && strings.Contains(text, filepath.Base(dir)) {
				return true
			}
		}
	}
	return false
}

// platformDir returns the directory rec's platform was built from, or "".
func platformDir(rec Generated) string {
	if rec.Platform == nil {
		return ""
	}
	return rec.Platform.Dir
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
	Dropped   uint64 // entries dropped because the directory their result names was reclaimed
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

	// bound is the record whose directory a memoizable err names (its
	// Identity and Dir set), else zero: only a render against that very
	// record hits the entry.
	bound Generated
}

// serves reports whether e is the result of a render against rec.
func (e *entry) serves(rec Generated) bool {
	return e.bound.Identity == (publish.Identity[int64]{}) || e.bound.Identity == rec.Identity && e.bound.Dir == rec.Dir
}

// key returns the key a render's result of key is known by: key, or
// bound to the directory e's result names.
func (e *entry) key(key RenderKey) RenderKey {
	if e.bound.Identity == (publish.Identity[int64]{}) {
		return key
	}
	return boundKey(key, e.bound)
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

// newEntry returns the entry of a render of key against rec that gave out
// and err. An output is memoizable when it encodes (MarshalBinary), as
// every Kernel's does, and accounted at its encoding's length; an error
// that names rec's directory is bound to rec.
func newEntry(key RenderKey, rec Generated, out kernel.RenderOutput, err error) *entry {
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
		if namesPlatform(rec, err.Error(), string(e.encoded)) {
			e.bound = Generated{Identity: rec.Identity, Dir: rec.Dir}
			key = boundKey(key, rec)
		}
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

// identityEntries are the evaluations against one identity still running,
// whose results may name its directory.
type identityEntries struct {
	pending int  // evaluations begun and not yet finished
	gone    bool // reclaimed: no result that names its directory is stored
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
// that evaluate misses once. Its entries are keyed on what a render
// reads, so they outlive the generation they were rendered against;
// only those whose result names a directory go with it.
type memo struct {
	budget int64 // 0: nothing is stored

	mu         sync.Mutex
	lru        *simplelru.LRU[RenderKey, *entry]
	bytes      int64
	identities map[publish.Identity[int64]]*identityEntries
	flights    map[flightKey]*flight // the flights that renders may join
	stats      MemoStats
}

func newMemo(budget int64) *memo {
	m := &memo{identities: map[publish.Identity[int64]]*identityEntries{}, flights: map[flightKey]*flight{}}
	if budget > 0 {
		m.budget = budget
		// The LRU counts no bytes: its size is never the bound, the
		// budget is, and evict keeps to it.
		m.lru, _ = simplelru.NewLRU[RenderKey, *entry](math.MaxInt, nil)
	}
	return m
}

// A flightKey is what one evaluation is shared by: the renders of one
// key against one record, whose directory its result may name.
type flightKey struct {
	key RenderKey
	id  publish.Identity[int64]
	dir string
}

// lookup returns key's entry for a render against rec, if the memo holds
// one that serves it, counting a hit or a miss.
func (m *memo) lookup(key RenderKey, rec Generated) (*entry, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lru != nil {
		if e, ok := m.lru.Get(key); ok && e.serves(rec) {
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

// evaluate returns the result of key's evaluation against rec by eval,
// and the key that result is known by (bound to rec's directory when it
// names it), run once for every render of key against rec that waits for
// it at once, on a context of its own that is cancelled when its last
// waiter leaves. It returns ctx.Err() as soon as ctx is done. When eval
// panics, every render waiting for it panics, each in its own goroutine,
// with the value eval panicked with; nothing is stored, and the next
// render of key evaluates again.
func (m *memo) evaluate(ctx context.Context, key RenderKey, rec Generated, eval func(context.Context) (kernel.RenderOutput, error)) (kernel.RenderOutput, RenderKey, error) {
	fk := flightKey{key: key, id: rec.Identity, dir: rec.Dir}
	for {
		f := m.join(ctx, fk, rec, eval)
		select {
		case <-f.done:
			m.leave(fk, f)
			if f.e == nil {
				panic(f.panic)
			}
			if f.e.cancelled && ctx.Err() == nil {
				continue // cancelled by waiters who left, not by this one
			}
			out, err := f.e.result()
			return out, f.e.key(key), err
		case <-ctx.Done():
			m.leave(fk, f)
			return kernel.RenderOutput{}, key, ctx.Err()
		}
	}
}

// join returns fk's flight, starting one if none runs.
func (m *memo) join(ctx context.Context, fk flightKey, rec Generated, eval func(context.Context) (kernel.RenderOutput, error)) *flight {
	m.mu.Lock()
	defer m.mu.Unlock()
	f := m.flights[fk]
	if f != nil {
		m.stats.Shared++
		f.waiters++
		return f
	}
	f = &flight{ie: m.begin(rec.Identity), waiters: 1, done: make(chan struct{})}
	f.ctx, f.cancel = context.WithCancel(context.WithoutCancel(ctx))
	m.flights[fk] = f
	go m.run(fk, rec, f, eval)
	return f
}

// run is f's evaluation. It stores the result if it may, and ends f; a
// panic of eval ends f with the panic's value, and stores nothing.
func (m *memo) run(fk flightKey, rec Generated, f *flight, eval func(context.Context) (kernel.RenderOutput, error)) {
	var e *entry
	panicked := true
	defer func() {
		var v any
		if panicked {
			v = recover()
		}
		m.mu.Lock()
		m.finish(fk, f.ie, e)
		if m.flights[fk] == f {
			delete(m.flights, fk)
		}
		f.e, f.panic = e, v
		m.mu.Unlock()
		close(f.done)
	}()
	out, err := eval(f.ctx)
	e = newEntry(fk.key, rec, out, err)
	e.cancelled = err != nil && f.ctx.Err() != nil && errors.Is(err, context.Canceled)
	panicked = false
}

// leave records that a waiter of f left; the last one cancels f's
// evaluation, which no render joins any more.
func (m *memo) leave(fk flightKey, f *flight) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if f.waiters--; f.waiters > 0 {
		return
	}
	if m.flights[fk] == f {
		delete(m.flights, fk)
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

// finish records an evaluation of fk against ie's identity ending with e
// (nil: it panicked), and stores e if it may: not when its result names a
// directory reclaimed meanwhile. m.mu is held.
func (m *memo) finish(fk flightKey, ie *identityEntries, e *entry) {
	if ie.pending--; ie.pending == 0 && m.identities[fk.id] == ie {
		delete(m.identities, fk.id)
	}
	if e == nil || !e.memoizable || m.lru == nil || e.size > m.budget {
		return
	}
	if ie.gone && e.bound.Identity != (publish.Identity[int64]{}) {
		return
	}
	if old, ok := m.lru.Peek(fk.key); ok {
		m.bytes -= old.size
	}
	m.lru.Add(fk.key, e)
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

// drop removes every entry whose result names the directory of id, which
// was reclaimed, and stores none of the evaluations against it still
// running whose result names it; every other entry stays, valid for any
// generation with the same dependencies. An id with no digest (a removal
// found still running, whose event carries the key alone) stands for
// every identity of its key. drop looks at every entry: a reclaim is rare
// beside renders, and an index by directory would hold a second copy of
// each bound record.
func (m *memo) drop(id publish.Identity[int64]) {
	m.mu.Lock()
	defer m.mu.Unlock()
	matches := func(bound publish.Identity[int64]) bool {
		if bound == (publish.Identity[int64]{}) {
			return false
		}
		return bound == id || id.Digest == (publish.Identity[int64]{}).Digest && bound.Key == id.Key
	}
	for bid, ie := range m.identities {
		if matches(bid) {
			ie.gone = true
			delete(m.identities, bid)
		}
	}
	if m.lru == nil {
		return
	}
	for _, k := range m.lru.Keys() {
		if e, ok := m.lru.Peek(k); ok && matches(e.bound.Identity) {
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

// A readsCache remembers what each instance content reads of a platform
// ([kernel.ReadsOf]), a function of its files' bytes alone, by their
// digest: the parse is paid once per content, not once per key. It is
// bounded by accounted bytes (an eighth of the memo's budget: nothing
// when the memo is off), least recently used first. It is safe for
// concurrent use, and the parse runs outside its lock.
type readsCache struct {
	budget int64

	mu    sync.Mutex
	lru   *simplelru.LRU[string, kernel.Reads]
	bytes int64
}

func newReadsCache(budget int64) *readsCache {
	c := &readsCache{budget: budget}
	c.lru, _ = simplelru.NewLRU[string, kernel.Reads](math.MaxInt, nil)
	return c
}

// readsSize is the bytes a readsCache accounts for an entry: its digest,
// its paths, and the overhead of the entry and each path.
func readsSize(digest string, r kernel.Reads) int64 {
	n := int64(128 + len(digest))
	paths, _ := r.Catalogs()
	for _, path := range paths {
		n += int64(16 + len(path))
	}
	return n
}

// of returns the reads of the instance content with the digest, computed
// by reads when the cache does not hold them.
func (c *readsCache) of(digest string, reads func() kernel.Reads) kernel.Reads {
	if c.budget == 0 {
		return reads()
	}
	c.mu.Lock()
	r, ok := c.lru.Get(digest)
	c.mu.Unlock()
	if ok {
		return r
	}
	r = reads()
	size := readsSize(digest, r)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.lru.Peek(digest); ok || size > c.budget {
		return r
	}
	c.lru.Add(digest, r)
	c.bytes += size
	for c.bytes > c.budget {
		k, old, ok := c.lru.RemoveOldest()
		if !ok {
			break
		}
		c.bytes -= readsSize(k, old)
	}
	return r
}
