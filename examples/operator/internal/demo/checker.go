package demo

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"sync"
	"time"

	"leasekit.dev/platform"
)

// The kinds of violation a Checker reports.
const (
	// ViolationLeasedMissing: a leased generation's directory was missing
	// when the lease was taken or when it was released.
	ViolationLeasedMissing = "leased-missing"
	// ViolationLeasedChanged: a leased generation's directory changed
	// between lease and release.
	ViolationLeasedChanged = "leased-changed"
	// ViolationUnpublished: a leased generation's directory holds files
	// that were never published for that generation.
	ViolationUnpublished = "unpublished-content"
	// ViolationReclaimLate: a superseded generation's directory was still
	// on disk, with no lease on it, longer than the grace period after it
	// became reclaimable (superseded and its last lease released).
	ViolationReclaimLate = "reclaim-late"
	// ViolationUnknownDir: a generation directory on disk that was never
	// published.
	ViolationUnknownDir = "unknown-directory"
)

// A Violation is one broken promise a Checker saw.
type Violation struct {
	Kind       string `json:"kind"`
	Generation int64  `json:"generation"`
	Detail     string `json:"detail"`
}

// String returns the violation as "kind: generation N: detail".
func (v Violation) String() string {
	return fmt.Sprintf("%s: generation %d: %s", v.Kind, v.Generation, v.Detail)
}

// maxViolationDetails bounds the violations a Checker keeps in full; it
// counts every one.
const maxViolationDetails = 100

// A Checker watches a publisher's directory from the outside and checks
// its promises: a leased generation's directory is present and unchanged
// from lease to release and holds files published for that generation, and
// a superseded generation's directory goes soon after its last lease is
// released. A Checker is safe for concurrent use by multiple goroutines.
type Checker struct {
	layout platform.Layout
	store  *platform.Store
	grace  time.Duration

	mu         sync.Mutex
	gens       map[int64]*genState
	violations []Violation
	count      int
	maxIdle    int // most superseded, unleased directories seen on disk at once
	outlived   Outlived
}

// Outlived counts leases that outlived their generation: held when a newer
// generation was published, released later, their directory intact or
// reported as a violation.
type Outlived struct {
	Leases      int     `json:"leases"`      // leases released after their generation was superseded
	Generations int     `json:"generations"` // distinct superseded generations they held
	LongestMS   float64 `json:"longest_ms"`  // the longest a lease was held past its generation's supersession
}

// genState is what a Checker knows of one generation.
type genState struct {
	published   []digest  // every file set published for it
	leases      int       // outstanding holds
	lastRelease time.Time // when its last hold was released
	superseded  time.Time // when it stopped being current; zero while current or unsettled
	reported    bool      // a lingering directory was reported
	outlived    bool      // a lease outlived this generation's supersession
}

// NewChecker returns a Checker of the generations under layout whose
// current generation store holds. A superseded directory may stay for
// grace after it became reclaimable.
func NewChecker(layout platform.Layout, store *platform.Store, grace time.Duration) *Checker {
	return &Checker{layout: layout, store: store, grace: grace, gens: map[int64]*genState{}}
}

func (c *Checker) gen(g int64) *genState {
	s, ok := c.gens[g]
	if !ok {
		s = &genState{}
		c.gens[g] = s
	}
	return s
}

// violate records a violation; c.mu is held.
func (c *Checker) violate(kind string, g int64, format string, args ...any) {
	c.count++
	if len(c.violations) < maxViolationDetails {
		c.violations = append(c.violations, Violation{Kind: kind, Generation: g, Detail: fmt.Sprintf(format, args...)})
	}
}

// Expect records that files are about to be published as generation g.
// Call it before the publish: a render may lease g before Publish returns.
func (c *Checker) Expect(g int64, files map[string][]byte) {
	d := filesDigest(files)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.gen(g)
	if !slices.Contains(s.published, d) {
		s.published = append(s.published, d)
	}
}

// Settled records that a publish returned at now and current is the
// store's generation: every other generation is superseded from now on, if
// it was not already.
func (c *Checker) Settled(current int64, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for g, s := range c.gens {
		if g != current && s.superseded.IsZero() {
			s.superseded = now
		}
	}
}

// A Hold is one lease a Checker watches, from Acquire to Release.
type Hold struct {
	c      *Checker
	g      platform.Generated
	digest digest
	ok     bool // the directory was readable at Acquire
}

// Acquire checks a leased record's directory: it must exist and hold files
// published for the record's generation. Call it right after the lease is
// taken, and Release on the Hold when done.
func (c *Checker) Acquire(g platform.Generated) *Hold {
	d, err := dirDigest(g.Dir)
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.gen(g.Generation)
	s.leases++
	h := &Hold{c: c, g: g, digest: d, ok: err == nil}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c.violate(ViolationLeasedMissing, g.Generation, "%s is missing at lease", g.Dir)
	case err != nil:
		c.violate(ViolationLeasedMissing, g.Generation, "%s is unreadable at lease: %v", g.Dir, err)
	case !slices.Contains(s.published, d):
		c.violate(ViolationUnpublished, g.Generation, "%s holds files never published for it", g.Dir)
	}
	return h
}

// Release checks the directory again, which must be as it was at Acquire,
// then calls release (the lease's) and records when the lease ended.
// Release must be called once.
func (h *Hold) Release(release func()) {
	d, err := dirDigest(h.g.Dir)
	release()
	now := time.Now()
	c := h.c
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.gen(h.g.Generation)
	s.leases--
	s.lastRelease = now
	if !s.superseded.IsZero() {
		c.outlived.Leases++
		if !s.outlived {
			s.outlived = true
			c.outlived.Generations++
		}
		c.outlived.LongestMS = max(c.outlived.LongestMS, ms(now.Sub(s.superseded)))
	}
	switch {
	case !h.ok:
		// Reported at Acquire.
	case errors.Is(err, fs.ErrNotExist):
		c.violate(ViolationLeasedMissing, h.g.Generation, "%s vanished while leased", h.g.Dir)
	case err != nil:
		c.violate(ViolationLeasedMissing, h.g.Generation, "%s became unreadable while leased: %v", h.g.Dir, err)
	case d != h.digest:
		c.violate(ViolationLeasedChanged, h.g.Generation, "%s changed while leased", h.g.Dir)
	}
}

// Sweep lists the generation directories on disk and reports, once each,
// those that should have gone: superseded, unleased, and reclaimable for
// longer than the grace period at now; and those never published. It
// returns how many superseded, unleased directories it found.
func (c *Checker) Sweep(now time.Time) (idle int, err error) {
	// Leases first: a generation leased now was leased while listing.
	leased := c.store.Leased()
	current := c.store.Generation()
	onDisk, err := c.layout.Generations()
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range onDisk {
		if g == current {
			continue
		}
		s, ok := c.gens[g]
		if !ok {
			s = c.gen(g)
			s.reported = true
			c.violate(ViolationUnknownDir, g, "%s was never published", c.layout.Dir(g))
			continue
		}
		if slices.Contains(leased, g) {
			// Leased by someone this Checker does not watch: its
			// last release is no earlier than now.
			s.lastRelease = now
			continue
		}
		if s.leases > 0 || s.superseded.IsZero() {
			continue
		}
		idle++
		since := s.superseded
		if s.lastRelease.After(since) {
			since = s.lastRelease
		}
		if late := now.Sub(since); late > c.grace && !s.reported {
			s.reported = true
			c.violate(ViolationReclaimLate, g, "%s still on disk %v after it became reclaimable (grace %v)",
				c.layout.Dir(g), late.Round(time.Millisecond), c.grace)
		}
	}
	c.maxIdle = max(c.maxIdle, idle)
	c.forget(onDisk, current)
	return idle, nil
}

// forget drops what c knows of generations that are gone and need no more
// watching, so its memory follows what is on disk, not the run's length;
// c.mu is held.
func (c *Checker) forget(onDisk []int64, current int64) {
	for g, s := range c.gens {
		if g != current && s.leases == 0 && !s.superseded.IsZero() && !slices.Contains(onDisk, g) && len(c.gens) > 16 {
			// A stale publish may name g again; it is refused
			// before anything is written, so g's file sets are no
			// longer needed.
			delete(c.gens, g)
		}
	}
}

// Violations returns how many violations the Checker saw and the first of
// them in full.
func (c *Checker) Violations() (int, []Violation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.count, slices.Clone(c.violations)
}

// Outlived returns how many leases outlived their generation, on how many
// generations, and by how long at most.
func (c *Checker) Outlived() Outlived {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.outlived
}

// MaxIdle returns the most superseded, unleased directories a Sweep found
// on disk at once.
func (c *Checker) MaxIdle() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxIdle
}
