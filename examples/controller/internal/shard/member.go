package shard

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"

	"leasekit.dev/examples/controller/internal/ring"
)

const (
	// RingLabel labels each member's Lease with the ring's name.
	RingLabel = "ring.examples.leasekit.dev/name"
	// ClaimAnnotation holds, on a member's Lease, the part of the hash
	// space it claims, as [ring.Set.String] spells it.
	ClaimAnnotation = "ring.examples.leasekit.dev/claim"
	// IncarnationAnnotation holds, on a member's Lease, the incarnation
	// that holds it: a random name each [New] draws, so that two replicas
	// started with one identity tell each other apart.
	IncarnationAnnotation = "ring.examples.leasekit.dev/incarnation"
	// WaitingAnnotation names, on a member's Lease, an incarnation of the
	// same identity that waits for the Lease to expire, so that the one
	// holding it learns of it.
	WaitingAnnotation = "ring.examples.leasekit.dev/waiting"
)

// Config is what [New] needs.
type Config struct {
	// Ring names the ring: a DNS label. Its members' Leases carry it in
	// RingLabel and are named <Ring>-<Identity>.
	Ring string
	// Namespace holds the members' Leases.
	Namespace string
	// Identity names this member, unique in the ring (the pod's name): a
	// DNS subdomain.
	Identity string
	// LeaseDuration is how long a member's Lease holds after its last
	// renewal seen: a member whose Lease is not renewed for that long is
	// no longer live. It bounds every Lease this member honours, whatever
	// duration the Lease announces. At least three RenewPeriods.
	LeaseDuration time.Duration
	// RenewPeriod is how often the member renews its Lease and looks at
	// the ring.
	RenewPeriod time.Duration
	// Client reads and writes the Leases.
	Client kubernetes.Interface
	// Logger receives the ring's changes.
	Logger logr.Logger
	// OnChange, when set, is called with what this member started and
	// stopped writing for, after each change; it must not block.
	OnChange func(gained, lost ring.Set)
	// Recorder, when set, receives an event on the Lease concerned for
	// each Lease of the ring it ignores as not of the ring's shape, and
	// each meeting of two incarnations of this identity.
	Recorder events.EventRecorder
}

var (
	dnsLabel     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)
)

// Validate checks the configuration, naming the value and the rule.
func (c *Config) Validate() error {
	switch {
	case len(c.Ring) > 40 || !dnsLabel.MatchString(c.Ring):
		return fmt.Errorf("shard: ring name %q: must be a DNS label of at most 40 characters", c.Ring)
	case c.Namespace == "":
		return errors.New("shard: the Leases' namespace is required")
	case c.Identity == "" || len(c.Ring)+1+len(c.Identity) > 253 || !dnsSubdomain.MatchString(c.Identity):
		return fmt.Errorf("shard: identity %q: must be a DNS subdomain, its Lease name %q at most 253 characters", c.Identity, c.Ring+"-"+c.Identity)
	case c.RenewPeriod <= 0:
		return fmt.Errorf("shard: renew period %v: must be positive", c.RenewPeriod)
	case c.LeaseDuration < 3*c.RenewPeriod:
		return fmt.Errorf("shard: lease duration %v: must be at least three renew periods (%v)", c.LeaseDuration, 3*c.RenewPeriod)
	case c.Client == nil:
		return errors.New("shard: a client is required")
	}
	return nil
}

// observed is what this member knows of another Lease of the ring: the
// identity of its holder ("" when the Lease is not of the ring's shape,
// and why in problem), its claim (everything when it does not parse),
// its resourceVersion, when that version was first seen here, the lease
// duration it announces, and whether it was seen deleted.
//
// Every Lease counts, its claim with it, until a lease duration of this
// member's after it was last seen: a Lease deleted, or not of the ring's
// shape, may still have a holder that writes. Only a Lease seen deleted
// with an empty claim is gone at once.
type observed struct {
	id        string
	problem   string
	claim     ring.Set
	rv        string
	seen      time.Time
	announced time.Duration
	deleted   bool
	// incarnation holds the Lease as seen; when another held it before,
	// with a claim, that claim counts too until prevUntil (the earlier
	// holder may still write, its Lease deleted or taken over).
	incarnation string
	prev        ring.Set
	prevUntil   time.Time
}

// claims returns what o counts for at now.
func (o observed) claims(now time.Time) ring.Set {
	if now.Before(o.prevUntil) {
		return o.claim.Union(o.prev)
	}
	return o.claim
}

// counters are the member's counts for its metrics.
type counters struct {
	foreignSeen, incarnationConflicts, renewFailures atomic.Int64
}

// Member is one replica's membership of a ring. Create it with [New], add
// it to the manager (it is a runnable that needs no leader election) and
// take a [ring.Hold] for each write. It is safe for concurrent use.
type Member struct {
	cfg  Config
	gate ring.Gate
	name string // the Lease's name
	sel  labels.Selector

	wake chan struct{}

	incarnation string // this run's, in IncarnationAnnotation
	metrics     counters

	mu        sync.Mutex
	peers     map[string]observed // by Lease name, this member's excluded
	reported  map[string]string   // by Lease name, the last problem reported
	joined    bool                // this member holds its Lease
	waitingOn string              // the incarnation whose Lease it waits for
	waiters   map[string]bool     // incarnations seen waiting for its Lease
	// earlier is what another incarnation holding this member's Lease
	// may write for when this one finds the Lease gone (everything: its
	// last versions went unseen), counted as a peer's claim until
	// earlierUntil, a lease duration after that Lease was last seen.
	earlier      ring.Set
	earlierUntil time.Time
	refused      error // the last refusal by the API server, nil after a success
	startErr     error // what made Start fail
	// watchedSince is when this member first saw the ring whole: it takes
	// nothing for a lease duration after, since a Lease deleted before it
	// looked left it no evidence of a holder that may still write.
	watchedSince time.Time
	claim        ring.Set // published
	target       ring.Set
	lease        *coordinationv1.Lease // last written
	deadline     time.Time             // writes stop here
	abandon      bool                  // stop without releasing the Lease
	covers       []*sharded            // informers narrowed to the cover
	cover        ring.Set
	coverSet     chan struct{} // closed once cover is first set
	serverSet    bool
	server       bool // the API server honours the shard selector
	handovers    map[string]int
}

// New returns a member, validating cfg.
func New(cfg Config) (*Member, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("shard: draw an incarnation: %w", err)
	}
	return &Member{
		cfg:         cfg,
		name:        cfg.Ring + "-" + cfg.Identity,
		sel:         labels.SelectorFromSet(labels.Set{RingLabel: cfg.Ring}),
		incarnation: hex.EncodeToString(b[:]),
		wake:        make(chan struct{}, 1),
		peers:       map[string]observed{},
		reported:    map[string]string{},
		waiters:     map[string]bool{},
		coverSet:    make(chan struct{}),
		handovers:   map[string]int{},
	}, nil
}

// Hold takes a hold on the object uid for one reconcile; see [ring.Hold].
func (m *Member) Hold(uid types.UID) *ring.Hold { return m.gate.Hold(ring.Hash(string(uid))) }

// Abandon makes Start return, once its context ends, without releasing
// the Lease: the other members take this one's part once it expires, as
// they would a crashed member's.
func (m *Member) Abandon() {
	m.mu.Lock()
	m.abandon = true
	m.mu.Unlock()
}

// NeedLeaderElection reports false: every replica is a member.
func (m *Member) NeedLeaderElection() bool { return false }

// Status is what a member knows of the ring.
type Status struct {
	Identity string
	Members  int      // live members, this one included
	Target   ring.Set // its target
	Claim    ring.Set // what it claims
	Writing  ring.Set // what it writes for now
	// ServerSide reports whether the API server honours the shard
	// selector; Known whether that was found out yet.
	ServerSide, Known bool
	// Gained and Lost count the handovers this member took part in.
	Gained, Lost int
	// Foreign counts the Leases of the ring, not of its shape, that count
	// until they expire; Deleted those seen deleted with a claim.
	Foreign, Deleted int
	// Waiting names the other incarnation of this identity whose Lease
	// this member waits for, "" when it waits for none.
	Waiting string
}

// Status returns what the member knows now.
func (m *Member) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	live, _ := m.ringLocked(now)
	foreign, deleted := 0, 0
	for _, p := range m.peers {
		if now.Before(m.expiry(p)) {
			if p.id == "" {
				foreign++
			} else if p.deleted {
				deleted++
			}
		}
	}
	w, _ := m.gate.Writing()
	if !now.Before(m.deadline) {
		w = nil
	}
	return Status{
		Identity: m.cfg.Identity, Members: len(live) + 1, Target: m.target, Claim: m.claim, Writing: w,
		ServerSide: m.server, Known: m.serverSet, Gained: m.handovers["gained"], Lost: m.handovers["lost"],
		Foreign: foreign, Deleted: deleted, Waiting: m.waitingOn,
	}
}

// Ready is a readiness check (for a manager's AddReadyzCheck): nil while
// the member holds its Lease and renewed it recently enough to write;
// else an error saying why not (Start failed, not yet joined, waiting
// for another incarnation's Lease, the API server refusing it, a renewal
// overdue). It never blocks.
func (m *Member) Ready(*http.Request) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.startErr != nil:
		return m.startErr
	case m.waitingOn != "":
		return fmt.Errorf("shard: ring %s: waiting for incarnation %s of identity %s to let its Lease expire", m.cfg.Ring, m.waitingOn, m.cfg.Identity)
	case m.refused != nil:
		return m.refused
	case !m.joined:
		return fmt.Errorf("shard: ring %s: not yet joined", m.cfg.Ring)
	case !time.Now().Before(m.deadline):
		return fmt.Errorf("shard: ring %s: Lease %s/%s not renewed in time: writing for nothing", m.cfg.Ring, m.cfg.Namespace, m.name)
	}
	return nil
}

// expiry returns when p no longer counts: a lease duration of this
// member's after it was last seen, whatever duration it announces.
func (m *Member) expiry(p observed) time.Time { return p.seen.Add(m.cfg.LeaseDuration) }

// ringLocked returns the identities of the live members other than this
// one, sorted, and every Lease that counts with its claim: a member's
// Lease under its identity, with the claim it publishes now, as
// [ring.Plan]'s assignment reads the claims of the live identities; any
// other under "lease:" and its name, which no identity is, so its claim
// keeps what it names from a take and takes no part in the assignment.
// The claim of an earlier incarnation of a member, or of another
// incarnation of this one, counts that way too: the holder of a Lease
// does not see the claims its Lease held before, and every member must
// deal the space from the same claims. m.mu is held.
func (m *Member) ringLocked(now time.Time) (live []string, peers []ring.Peer) {
	for name, p := range m.peers {
		if now.Before(p.prevUntil) {
			peers = append(peers, ring.Peer{ID: "lease:" + name + ":earlier", Claim: p.prev})
		}
		if !now.Before(m.expiry(p)) {
			continue
		}
		id := "lease:" + name // no identity has a colon
		if p.id != "" {
			id = p.id
		}
		peers = append(peers, ring.Peer{ID: id, Claim: p.claim})
		if p.id != "" && p.id != m.cfg.Identity {
			live = append(live, p.id)
		}
	}
	if now.Before(m.earlierUntil) {
		peers = append(peers, ring.Peer{ID: "lease:" + m.name, Claim: m.earlier})
	}
	slices.Sort(live)
	live = slices.Compact(live)
	return live, peers
}

// leaseFor returns the lease duration this member's own writes must end
// within: its own, or the shortest that a live member of the ring's shape
// announces, if shorter (and at least three renew periods), since that
// member judges this one by its own.
func (m *Member) leaseFor(now time.Time) time.Duration {
	d := m.cfg.LeaseDuration
	for _, p := range m.peers {
		if p.id != "" && now.Before(m.expiry(p)) && p.announced > 0 {
			d = min(d, max(p.announced, 3*m.cfg.RenewPeriod))
		}
	}
	return d
}

func (m *Member) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// AccessError is a request the API server refused (Forbidden or
// Unauthorized): the verb, the resource and namespace, and its error.
type AccessError struct {
	Ring, Verb, Resource, Namespace string
	Err                             error
}

func (e *AccessError) Error() string {
	return fmt.Sprintf("shard: ring %s: the API server refuses %s on %s in namespace %s (grant it to this replica's ServiceAccount): %v", e.Ring, e.Verb, e.Resource, e.Namespace, e.Err)
}

func (e *AccessError) Unwrap() error { return e.Err }

// refusal returns err as an *AccessError when the API server refused verb
// on the Leases, else err.
func (m *Member) refusal(verb string, err error) error {
	if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
		return &AccessError{Ring: m.cfg.Ring, Verb: verb, Resource: "leases.coordination.k8s.io", Namespace: m.cfg.Namespace, Err: err}
	}
	return err
}

// Start runs the membership until ctx ends: it creates this member's
// Lease (or takes over its own from an earlier run: at once when that
// run's claim is empty, else once that Lease would have expired),
// watches the ring's Leases, renews its own each renew period and runs
// the handover. When ctx ends it stops writing, waits for its holds to
// end (at most the lease duration), publishes an empty claim and deletes
// its Lease, so the others take its part at once; unless
// [Member.Abandon] was called, or a hold outlived the wait: then its
// Lease is left to expire. It returns nil once ctx ends; or the error
// that kept it from joining; or, within its first renew period, an
// [*AccessError] when the API server refuses it the Leases.
func (m *Member) Start(ctx context.Context) error {
	err := m.run(ctx)
	if err != nil {
		m.mu.Lock()
		m.startErr = err
		m.mu.Unlock()
	}
	return err
}

func (m *Member) run(ctx context.Context) error {
	log := m.cfg.Logger.WithValues("ring", m.cfg.Ring, "identity", m.cfg.Identity, "incarnation", m.incarnation)
	leases := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = m.sel.String()
			l, err := leases.List(ctx, o)
			return l, m.refusal("list", err)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = m.sel.String()
			w, err := leases.Watch(ctx, o)
			return w, m.refusal("watch", err)
		},
	}
	// A client that cannot stream a list (client-go's fake) says so, and
	// the reflector lists instead.
	inf := toolscache.NewSharedIndexInformer(toolscache.ToListWatcherWithWatchListSemantics(lw, m.cfg.Client), &coordinationv1.Lease{}, 0, toolscache.Indexers{})
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.observe(log, obj, false) },
		UpdateFunc: func(_, obj any) { m.observe(log, obj, false) },
		DeleteFunc: func(obj any) { m.observe(log, obj, true) },
	}); err != nil {
		return err
	}
	// A refusal of the list or the watch is fatal in the first renew
	// period after joining (or before); later it is logged, counted and
	// makes the member not ready, while the informer retries.
	fatal := make(chan error, 1)
	var joinedAt time.Time
	var joinedMu sync.Mutex
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *toolscache.Reflector, err error) {
		var ae *AccessError
		if errors.As(err, &ae) {
			m.mu.Lock()
			m.refused = err
			m.mu.Unlock()
			joinedMu.Lock()
			early := joinedAt.IsZero() || time.Since(joinedAt) < m.cfg.RenewPeriod
			joinedMu.Unlock()
			if early {
				select {
				case fatal <- err:
				default:
				}
				return
			}
		}
		if !errors.Is(err, io.EOF) && !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			log.Error(err, "list or watch the ring's Leases; retrying")
		}
	}); err != nil {
		return err
	}
	infCtx, stopInf := context.WithCancel(context.WithoutCancel(ctx))
	var infDone sync.WaitGroup
	defer infDone.Wait()
	defer stopInf()
	infDone.Go(func() { inf.RunWithContext(infCtx) })
	synced := make(chan struct{})
	stopSync := make(chan struct{})
	infDone.Go(func() {
		if toolscache.WaitForCacheSync(stopSync, inf.HasSynced) {
			close(synced)
		}
	})
	select {
	case <-synced:
		m.mu.Lock()
		m.watchedSince = time.Now()
		m.mu.Unlock()
	case err := <-fatal:
		close(stopSync)
		return err
	case <-ctx.Done():
		close(stopSync)
		return nil
	}
	if err := m.join(ctx, log, true); err != nil {
		var ae *AccessError
		switch {
		case ctx.Err() != nil:
			m.leave(log)
			return nil
		case errors.As(err, &ae):
			return err
		}
		return fmt.Errorf("shard: join ring %s: %w", m.cfg.Ring, err)
	}
	joinedMu.Lock()
	joinedAt = time.Now()
	joinedMu.Unlock()
	log.Info("joined the ring", "lease", m.cfg.Namespace+"/"+m.name)

	var pendingStop ring.Set
	tick := time.NewTicker(m.cfg.RenewPeriod)
	defer tick.Stop()
	lastRenew := time.Now()
	expiry := time.NewTimer(time.Hour)
	defer expiry.Stop()
	pendingStop = m.step(ctx, log, pendingStop)
	for {
		// Wake when the next peer's Lease would expire, as seen.
		if next := m.nextExpiry(); !next.IsZero() {
			expiry.Reset(time.Until(next) + time.Millisecond)
		} else {
			expiry.Reset(time.Hour)
		}
		select {
		case <-ctx.Done():
			m.leave(log)
			return nil
		case err := <-fatal:
			m.leave(log)
			return err
		case <-tick.C:
		case <-m.wake:
		case <-expiry.C:
		}
		// A tick a little early still renews: a renewal is due each
		// period.
		if time.Since(lastRenew) >= m.cfg.RenewPeriod*9/10 {
			lastRenew = time.Now()
			m.mu.Lock()
			claim := m.claim
			m.mu.Unlock()
			if err := m.publish(ctx, log, claim); err != nil && ctx.Err() == nil {
				m.metrics.renewFailures.Add(1)
				log.Error(err, "renew the Lease")
				var ae *AccessError
				if errors.As(err, &ae) && time.Since(joinedAt) < 2*m.cfg.RenewPeriod {
					m.leave(log)
					return err
				}
			}
		}
		pendingStop = m.step(ctx, log, pendingStop)
	}
}

// step runs one round of the handover and returns what is stopped but
// still claimed.
func (m *Member) step(ctx context.Context, log logr.Logger, pendingStop ring.Set) ring.Set {
	m.mu.Lock()
	now := time.Now()
	fresh := now.Before(m.deadline)
	mature := !m.watchedSince.IsZero() && now.Sub(m.watchedSince) >= m.cfg.LeaseDuration
	claim, deadline := m.claim, m.deadline
	live, peers := m.ringLocked(now)
	m.mu.Unlock()
	writing, _ := m.gate.Writing()
	target, stop, take := ring.Plan(m.cfg.Identity, live, claim, writing, peers)
	if !fresh {
		writing = nil
	}
	m.gate.Set(target, writing.Minus(stop), deadline)
	m.mu.Lock()
	m.target = target
	m.mu.Unlock()
	if !stop.Empty() {
		log.Info("stopped writing for a part leaving this member's target", "part", stop.String(), "target", target.String())
		m.changed(nil, stop)
	}
	pendingStop = pendingStop.Union(stop)
	if !pendingStop.Empty() {
		dctx, cancel := context.WithTimeout(ctx, m.cfg.RenewPeriod/2)
		err := m.gate.Drain(dctx, pendingStop)
		cancel()
		if err == nil {
			if err := m.publish(ctx, log, claim.Minus(pendingStop)); err == nil {
				log.Info("released a part", "part", pendingStop.String())
				pendingStop = nil
			}
		}
	}
	m.setCover(target.Union(m.currentClaim()))
	m.probe(ctx)
	if take.Empty() || !fresh || !mature {
		return pendingStop
	}
	if err := m.take(ctx, log, take); err != nil && ctx.Err() == nil {
		log.Error(err, "take a part", "part", take.String())
	}
	m.setCover(target.Union(m.currentClaim()))
	return pendingStop
}

func (m *Member) currentClaim() ring.Set {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.claim
}

// take claims take, reads every Lease of the ring again from the API
// server, withdraws what another Lease that counts claims too, and
// writes for the rest. A Lease this member saw and the read does not
// hold (deleted) counts as last seen until it expires, and for
// everything while its deletion is not yet seen here: a version unseen
// may have claimed anything.
func (m *Member) take(ctx context.Context, log logr.Logger, take ring.Set) error {
	claim := m.currentClaim()
	if err := m.publish(ctx, log, claim.Union(take)); err != nil {
		return err
	}
	if !take.Minus(m.currentClaim()).Empty() {
		return nil // the Lease had lapsed: it published an empty claim
	}
	// A read that sees every write before it: a list without a
	// resourceVersion is served from etcd with a quorum read.
	list, err := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: m.sel.String()})
	if err != nil {
		// Claimed but not validated: withdraw at the next publish.
		m.withdraw(ctx, log, take)
		return m.refusal("list", err)
	}
	m.mu.Lock()
	others, mine := m.countsLocked(list.Items, time.Now())
	m.mu.Unlock()
	if !mine {
		// Its Lease changed since it published the claim (deleted, taken
		// over, edited): write for nothing new; the next renewal finds out.
		log.Info("did not take a part: this member's Lease changed after it claimed it", "part", take.String())
		return nil
	}
	valid := ring.Validate(take, others)
	if lost := take.Minus(valid); !lost.Empty() {
		log.Info("withdrew a claim another member made first", "part", lost.String())
		m.withdraw(ctx, log, lost)
	}
	if valid.Empty() {
		return nil
	}
	m.mu.Lock()
	target, deadline, claimed := m.target, m.deadline, m.claim
	m.mu.Unlock()
	if !time.Now().Before(deadline) || !valid.Minus(claimed).Empty() {
		return nil // the Lease lapsed meanwhile: the next renewal starts again
	}
	writing, _ := m.gate.Writing()
	m.gate.Set(target, writing.Union(valid), deadline)
	log.Info("took a part", "part", valid.String(), "target", target.String())
	m.changed(valid, nil)
	return nil
}

// countsLocked returns the claims of the other Leases that count against
// a take, from items, a read of every Lease of the ring at now, and
// whether items hold this member's Lease as it last published it. m.mu
// is held.
func (m *Member) countsLocked(items []coordinationv1.Lease, now time.Time) (others []ring.Peer, mine bool) {
	listed := map[string]bool{}
	published := m.lease.ResourceVersion
	for i := range items {
		l := &items[i]
		if l.Name == m.name {
			mine = l.ResourceVersion == published
			continue
		}
		listed[l.Name] = true
		p, ok := m.peers[l.Name]
		if ok && now.Before(p.prevUntil) {
			others = append(others, ring.Peer{ID: l.Name, Claim: p.prev}) // an earlier holder's
		}
		if ok && p.rv == l.ResourceVersion && !now.Before(m.expiry(p)) {
			continue // expired as seen, and not renewed since
		}
		o := m.shape(l)
		others = append(others, ring.Peer{ID: l.Name, Claim: o.claim})
	}
	for name, p := range m.peers {
		switch {
		case listed[name]:
		case !p.deleted:
			// Deleted, and not yet seen deleted here: a version after the
			// one seen (even one that expired as seen) may have claimed
			// anything, and its holder may still write for it.
			others = append(others, ring.Peer{ID: name, Claim: ring.Full()})
		case now.Before(m.expiry(p)) || now.Before(p.prevUntil):
			others = append(others, ring.Peer{ID: name, Claim: p.claims(now)}) // deleted: it counts until it expires
		}
	}
	if now.Before(m.earlierUntil) {
		others = append(others, ring.Peer{ID: m.name, Claim: m.earlier}) // another incarnation's
	}
	return others, mine
}

// withdraw publishes the claim without part; a failure leaves it to the
// next renewal, which publishes the claim as it is then.
func (m *Member) withdraw(ctx context.Context, log logr.Logger, part ring.Set) {
	m.mu.Lock()
	m.claim = m.claim.Minus(part)
	claim := m.claim
	m.mu.Unlock()
	_ = m.publish(ctx, log, claim)
}

func (m *Member) changed(gained, lost ring.Set) {
	m.mu.Lock()
	if !gained.Empty() {
		m.handovers["gained"]++
	}
	if !lost.Empty() {
		m.handovers["lost"]++
	}
	m.mu.Unlock()
	if m.cfg.OnChange != nil {
		m.cfg.OnChange(gained, lost)
	}
}

// fresh returns this member's Lease as it writes it: claiming nothing,
// held by this incarnation, renewed at send, with rv.
func (m *Member) fresh(send time.Time, rv string) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.name, Namespace: m.cfg.Namespace, ResourceVersion: rv,
			Labels:      map[string]string{RingLabel: m.cfg.Ring},
			Annotations: map[string]string{ClaimAnnotation: "", IncarnationAnnotation: m.incarnation},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To(m.cfg.Identity),
			LeaseDurationSeconds: ptr.To(int32(math.Ceil(m.cfg.LeaseDuration.Seconds()))),
			AcquireTime:          ptr.To(metav1.NewMicroTime(send)),
			RenewTime:            ptr.To(metav1.NewMicroTime(send)),
		},
	}
}

// join creates this member's Lease claiming nothing, or takes it over
// from another incarnation of this identity: at once when the Lease
// claims nothing and quick is set (a restart after a clean leave or a
// crash with nothing claimed), else once the Lease has not changed for a
// lease duration, as the ring would judge it expired. While it waits it
// writes for nothing, marks the Lease with WaitingAnnotation so that its
// holder learns of it, and says so; and should it find the Lease gone
// (deleted by hand) and create it, it takes nothing until a lease
// duration after it last saw the other's version, which may still write.
// A request that fails (but for a refusal, returned as an
// [*AccessError]) is tried again after a renew period. It blocks until
// it holds the Lease, or ctx ends.
func (m *Member) join(ctx context.Context, log logr.Logger, quick bool) error {
	leases := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace)
	defer func() {
		m.mu.Lock()
		m.waitingOn = ""
		m.mu.Unlock()
	}()
	var waitRV string
	var since time.Time
	// pause returns err when it ends the join (a refusal, ctx ended), else
	// nil once a renew period has passed: the join tries again.
	pause := func(err error) error {
		var ae *AccessError
		if errors.As(err, &ae) || ctx.Err() != nil {
			return err
		}
		log.Error(err, "join the ring; trying again")
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(m.cfg.RenewPeriod):
			return nil
		}
	}
	for {
		send := time.Now()
		got, err := leases.Create(ctx, m.fresh(send, ""), metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			old, gerr := leases.Get(ctx, m.name, metav1.GetOptions{})
			if apierrors.IsNotFound(gerr) {
				continue
			}
			if gerr != nil {
				if err := pause(m.refusal("get", gerr)); err != nil {
					return err
				}
				continue
			}
			other := old.Annotations[IncarnationAnnotation]
			claim, perr := ring.Parse(old.Annotations[ClaimAnnotation])
			_, annotated := old.Annotations[ClaimAnnotation]
			empty := annotated && perr == nil && claim.Empty()
			switch {
			case other == m.incarnation:
			case quick && empty:
				log.Info("took over this identity's Lease, which another incarnation left claiming nothing", "other", other)
			case old.ResourceVersion == waitRV && time.Since(since) >= m.cfg.LeaseDuration:
				log.Info("took over this identity's Lease: the other incarnation did not renew it for a lease duration", "other", other)
			default:
				if old.ResourceVersion != waitRV {
					if waitRV == "" {
						m.meet(log, old, "IncarnationWaiting", fmt.Sprintf("incarnation %s of identity %s found its Lease held by incarnation %s: it writes for nothing until that Lease is not renewed for %v", m.incarnation, m.cfg.Identity, other, m.cfg.LeaseDuration), other)
					}
					if old.Annotations[WaitingAnnotation] != m.incarnation {
						mark := old.DeepCopy()
						if mark.Annotations == nil {
							mark.Annotations = map[string]string{}
						}
						mark.Annotations[WaitingAnnotation] = m.incarnation
						if marked, err := leases.Update(ctx, mark, metav1.UpdateOptions{}); err == nil {
							old = marked
						}
					}
					waitRV, since = old.ResourceVersion, time.Now()
				}
				m.mu.Lock()
				m.waitingOn = cmp.Or(other, "unknown")
				// Should the Lease be gone at the next try, its holder
				// may write until it finds out, for what its versions
				// since this one claim: anything.
				m.earlier, m.earlierUntil = ring.Full(), since.Add(m.cfg.LeaseDuration)
				m.mu.Unlock()
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(m.cfg.RenewPeriod):
				}
				continue
			}
			send = time.Now()
			got, err = leases.Update(ctx, m.fresh(send, old.ResourceVersion), metav1.UpdateOptions{})
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				continue
			}
			err = m.refusal("update", err)
		} else {
			err = m.refusal("create", err)
		}
		if err != nil {
			if err := pause(err); err != nil {
				return err
			}
			continue
		}
		m.mu.Lock()
		m.lease, m.claim, m.joined, m.refused = got, nil, true, nil
		m.deadline = send.Add(m.leaseFor(send) - m.cfg.RenewPeriod)
		m.mu.Unlock()
		return nil
	}
}

// meet says that two incarnations of this identity met: a log line, the
// counter, and an event on the Lease.
func (m *Member) meet(log logr.Logger, l *coordinationv1.Lease, reason, note, other string) {
	m.metrics.incarnationConflicts.Add(1)
	log.Info("another incarnation of this identity: "+note, "other", other, "reason", reason)
	if m.cfg.Recorder != nil {
		m.cfg.Recorder.Eventf(l, nil, corev1.EventTypeWarning, reason, "Join", "%s", note)
	}
}

// publish writes this member's Lease with claim and a new renewTime: a
// renewal. The write carries the resourceVersion of the Lease last
// written. A renewal that completes before the current deadline moves
// the deadline to its start plus the lease duration less a renew period.
// Past the deadline the others may have judged this member expired and
// taken its part: it stops writing for everything and publishes an empty
// claim instead, to take its part again through the handover.
//
// When another writer changed the Lease, publish reads it again: still
// this incarnation's (a hand edit, or a waiting incarnation's mark), it
// writes over it; deleted, or another incarnation's, this member stops
// writing, waits for its writes in flight, and joins again ([Member.join]).
func (m *Member) publish(ctx context.Context, log logr.Logger, claim ring.Set) error {
	return m.write(ctx, log, claim, true)
}

// write is publish; with rejoin false a Lease deleted or taken over is
// left as it is and its error returned.
func (m *Member) write(ctx context.Context, log logr.Logger, claim ring.Set, rejoin bool) error {
	leases := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace)
	for attempt := 0; ; attempt++ {
		m.mu.Lock()
		l := m.lease.DeepCopy()
		deadline := m.deadline
		m.mu.Unlock()
		send := time.Now()
		lapsed := !send.Before(deadline)
		if lapsed {
			claim = nil
			m.stopAll()
		}
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		if l.Labels == nil {
			l.Labels = map[string]string{}
		}
		l.Labels[RingLabel] = m.cfg.Ring
		l.Annotations[ClaimAnnotation] = claim.String()
		l.Annotations[IncarnationAnnotation] = m.incarnation
		l.Spec.HolderIdentity = ptr.To(m.cfg.Identity)
		l.Spec.LeaseDurationSeconds = ptr.To(int32(math.Ceil(m.cfg.LeaseDuration.Seconds())))
		l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(send))
		got, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			cur, gerr := leases.Get(ctx, m.name, metav1.GetOptions{})
			switch {
			case gerr == nil && cur.Annotations[IncarnationAnnotation] == m.incarnation && attempt < 3:
				if w := cur.Annotations[WaitingAnnotation]; w != "" && w != m.incarnation {
					m.mu.Lock()
					news := !m.waiters[w]
					m.waiters[w] = true
					m.mu.Unlock()
					if news {
						m.meet(log, cur, "IncarnationContended", fmt.Sprintf("incarnation %s of identity %s holds its Lease; incarnation %s of the same identity waits for it to expire (two replicas run with one identity)", m.incarnation, m.cfg.Identity, w), w)
					}
				}
				m.mu.Lock()
				m.lease = cur
				m.mu.Unlock()
				continue // still this incarnation's: write over it
			case gerr != nil && !apierrors.IsNotFound(gerr):
				return errors.Join(err, m.refusal("get", gerr))
			case gerr == nil && cur.Annotations[IncarnationAnnotation] == m.incarnation:
				return err // still its own, changed at every attempt: the next renewal tries again
			}
			// Deleted by hand, or held by another incarnation: this member
			// no longer holds its Lease.
			m.mu.Lock()
			m.joined = false
			m.mu.Unlock()
			m.stopAll()
			if gerr == nil {
				other := cur.Annotations[IncarnationAnnotation]
				m.meet(log, cur, "IncarnationReplaced", fmt.Sprintf("incarnation %s of identity %s found its Lease taken over by incarnation %s: it writes for nothing and waits for that Lease to expire", m.incarnation, m.cfg.Identity, other), other)
			} else {
				log.Info("this member's Lease was deleted: it writes for nothing and creates it again", "lease", m.cfg.Namespace+"/"+m.name)
				// Another incarnation may have held it since this one
				// last wrote it, and writes until it finds out for what
				// its versions claimed (anything): that counts as another
				// incarnation's claim for a lease duration from now.
				m.mu.Lock()
				m.earlier, m.earlierUntil = ring.Full(), time.Now().Add(m.cfg.LeaseDuration)
				m.mu.Unlock()
			}
			if !rejoin {
				return err
			}
			dctx, cancel := context.WithTimeout(ctx, m.cfg.LeaseDuration)
			derr := m.gate.Drain(dctx, ring.Full())
			cancel()
			if derr != nil {
				return errors.Join(err, derr)
			}
			if jerr := m.join(ctx, log, false); jerr != nil {
				return errors.Join(err, jerr)
			}
			return err
		}
		if err != nil {
			err = m.refusal("update", err)
			var ae *AccessError
			if errors.As(err, &ae) {
				m.mu.Lock()
				m.refused = err
				m.mu.Unlock()
			}
			return err
		}
		done := time.Now()
		m.mu.Lock()
		m.lease, m.claim, m.refused = got, claim, nil
		if !lapsed && !done.Before(m.deadline) {
			// Completed past the deadline: publish the empty claim.
			m.mu.Unlock()
			m.stopAll()
			continue
		}
		m.deadline = send.Add(m.leaseFor(send) - m.cfg.RenewPeriod)
		deadline = m.deadline
		m.mu.Unlock()
		w, target := m.gate.Writing()
		m.gate.Set(target, w, deadline)
		return nil
	}
}

// stopAll stops writing for everything.
func (m *Member) stopAll() {
	_, target := m.gate.Writing()
	if _, lost := m.gate.Set(target, nil, time.Time{}); !lost.Empty() {
		m.changed(nil, lost)
	}
}

// leave stops writing, waits for the holds, publishes an empty claim and
// deletes the Lease, unless abandoned; a Lease it no longer holds (taken
// over, deleted) is left alone.
func (m *Member) leave(log logr.Logger) {
	m.gate.Set(nil, nil, time.Time{})
	m.mu.Lock()
	abandon, joined := m.abandon, m.joined
	m.joined = false
	m.mu.Unlock()
	if abandon {
		log.Info("left the ring without releasing the Lease; it expires")
		return
	}
	if !joined {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.LeaseDuration)
	defer cancel()
	if err := m.gate.Drain(ctx, ring.Full()); err != nil {
		log.Info("left the ring with a write in flight; the Lease expires")
		return
	}
	// The empty claim first: a peer that misses the deletion still knows
	// that this member writes for nothing.
	if err := m.write(ctx, log, nil, false); err != nil {
		log.Error(err, "publish the empty claim before leaving; the Lease expires")
		return
	}
	m.mu.Lock()
	rv := m.lease.ResourceVersion
	m.mu.Unlock()
	err := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace).Delete(ctx, m.name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{ResourceVersion: &rv},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		log.Error(m.refusal("delete", err), "release the Lease; it claims nothing and expires")
		return
	}
	log.Info("left the ring and released the Lease")
}

// shape returns what l says as a Lease of the ring, with the problem
// that makes it not of the ring's shape, if any. m.mu need not be held.
func (m *Member) shape(l *coordinationv1.Lease) observed {
	o := observed{rv: l.ResourceVersion, announced: time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second, incarnation: l.Annotations[IncarnationAnnotation]}
	holder := ptr.Deref(l.Spec.HolderIdentity, "")
	raw, annotated := l.Annotations[ClaimAnnotation]
	c, err := ring.Parse(raw)
	switch {
	case l.Labels[RingLabel] != m.cfg.Ring:
		o.problem = fmt.Sprintf("label %s is %q, not %q", RingLabel, l.Labels[RingLabel], m.cfg.Ring)
	case holder == "":
		o.problem = "it has no holderIdentity"
	case l.Name != m.cfg.Ring+"-"+holder || !dnsSubdomain.MatchString(holder):
		o.problem = fmt.Sprintf("holderIdentity %q: a member's Lease is named %s-<holderIdentity>", holder, m.cfg.Ring)
	case !annotated:
		o.problem = fmt.Sprintf("it has no annotation %s", ClaimAnnotation)
	case err != nil:
		o.problem = fmt.Sprintf("annotation %s %q: %v", ClaimAnnotation, raw, err)
	default:
		o.id = holder
	}
	o.claim = c
	if err != nil {
		o.claim = ring.Full() // unreadable: it may claim anything
	}
	return o
}

// observe records a Lease of the ring as seen now, or its deletion.
func (m *Member) observe(log logr.Logger, obj any, deleted bool) {
	unknown := false
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		// Found gone by a list after a watch ended: its last versions
		// went unseen, and what they claimed with them.
		obj, deleted, unknown = d.Obj, true, true
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok {
		return
	}
	if l.Name == m.name {
		m.poke() // a change of its own is found at its next write
		return
	}
	var report, reason string
	m.mu.Lock()
	p, known := m.peers[l.Name]
	if deleted && known && p.rv != l.ResourceVersion {
		// Its final state, newer than the one seen here.
		last := m.shape(l)
		p.claim, p.rv = last.claim, last.rv
	}
	if unknown && known {
		// Even a claim seen empty: a version after it may claim anything.
		p.claim = ring.Full()
	}
	switch {
	case deleted && (!known || p.claims(time.Now()).Empty()):
		delete(m.peers, l.Name)
		delete(m.reported, l.Name)
	case deleted:
		if !p.deleted {
			// Seen gone now: its holder may have renewed it after the
			// version seen here, and no read shows that version any more.
			p.deleted, p.seen = true, time.Now()
			m.peers[l.Name] = p
			report = fmt.Sprintf("Lease %s/%s was deleted while it claimed %v: it counts until a lease duration (%v) after it was seen gone", l.Namespace, l.Name, p.claim, m.cfg.LeaseDuration)
		}
	case !known || p.rv != l.ResourceVersion:
		o := m.shape(l)
		o.seen = time.Now()
		if known {
			o.prev, o.prevUntil = p.prev, p.prevUntil
			if p.incarnation != o.incarnation && !p.claim.Empty() && o.seen.Before(m.expiry(p)) {
				// Another incarnation holds it now: the earlier one's claim
				// counts until its Lease would have expired.
				o.prev, o.prevUntil = p.claims(o.seen), m.expiry(p)
			}
		}
		m.peers[l.Name] = o
		problem := o.problem
		if problem == "" && o.announced != m.cfg.LeaseDuration {
			problem = fmt.Sprintf("it announces a lease duration of %v, this member %v", o.announced, m.cfg.LeaseDuration)
		}
		if problem != m.reported[l.Name] {
			m.reported[l.Name] = problem
			if problem != "" {
				reason = "ForeignLease"
				report = fmt.Sprintf("Lease %s/%s is not a ring member's (%s): not a member; its claim counts until a lease duration (%v) after its last change", l.Namespace, l.Name, problem, m.cfg.LeaseDuration)
				if o.problem == "" {
					reason = "LeaseDuration"
					report = fmt.Sprintf("Lease %s/%s: %s; this member counts it for its own lease duration and ends its own writes within the shorter", l.Namespace, l.Name, problem)
				}
			}
		}
	}
	m.mu.Unlock()
	if report != "" {
		log.Info(report, "lease", l.Namespace+"/"+l.Name, "reason", cmp.Or(reason, "LeaseDeleted"))
		if reason == "ForeignLease" {
			m.metrics.foreignSeen.Add(1)
		}
		if reason != "" && m.cfg.Recorder != nil {
			m.cfg.Recorder.Eventf(l, nil, corev1.EventTypeWarning, reason, "Observe", "%s", report)
		}
	}
	m.poke()
}

// nextExpiry returns when the next Lease that counts expires, as seen, or
// zero.
func (m *Member) nextExpiry() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var next time.Time
	now := time.Now()
	if !m.watchedSince.IsZero() {
		next = m.watchedSince.Add(m.cfg.LeaseDuration) // it may take from then on
		if !next.After(now) {
			next = time.Time{}
		}
	}
	if e := m.earlierUntil; e.After(now) && (next.IsZero() || e.Before(next)) {
		next = e
	}
	for _, p := range m.peers {
		for _, e := range []time.Time{m.expiry(p), p.prevUntil} {
			if e.After(now) && (next.IsZero() || e.Before(next)) {
				next = e
			}
		}
	}
	return next
}

// Peers returns the identities of the live members, this one included,
// sorted.
func (m *Member) Peers() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	live, _ := m.ringLocked(time.Now())
	ids := append(live, m.cfg.Identity)
	slices.Sort(ids)
	return slices.Compact(ids)
}

// OnChange sets the function called with what this member started and
// stopped writing for, after each change; it must not block. Call it
// before Start.
func (m *Member) OnChange(f func(gained, lost ring.Set)) { m.cfg.OnChange = f }

// probe has each sharded informer find out, in the background, whether
// the API server honours the shard selector, until it is known.
func (m *Member) probe(ctx context.Context) {
	m.mu.Lock()
	known, cover, covers := m.serverSet, m.cover, slices.Clone(m.covers)
	m.mu.Unlock()
	if known || cover == nil {
		return
	}
	for _, s := range covers {
		go s.probe(ctx)
	}
}
