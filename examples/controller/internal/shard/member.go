// Package shard runs a replica's membership of a ring of controller
// replicas on Kubernetes: a coordination.k8s.io/v1 Lease of its own,
// renewed, which publishes the part of the hash space it claims; the
// other replicas' Leases, watched, whose renewals say who is live; and
// the handover of [leasekit.dev/examples/controller/internal/ring]
// between them. It also narrows a replica's informer of the sharded kind
// to the part it covers, on the API server where it honours
// ListOptions.ShardSelector, and on the client always.
package shard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"leasekit.dev/examples/controller/internal/ring"
)

const (
	// RingLabel labels each member's Lease with the ring's name.
	RingLabel = "ring.examples.leasekit.dev/name"
	// ClaimAnnotation holds, on a member's Lease, the part of the hash
	// space it claims, as [ring.Set.String] spells it.
	ClaimAnnotation = "ring.examples.leasekit.dev/claim"
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
	// no longer live. At least three RenewPeriods.
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
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// Validate checks the configuration, naming the value and the rule.
func (c *Config) Validate() error {
	switch {
	case len(c.Ring) > 40 || !dnsLabel.MatchString(c.Ring):
		return fmt.Errorf("shard: ring name %q: must be a DNS label of at most 40 characters", c.Ring)
	case c.Namespace == "":
		return errors.New("shard: the Leases' namespace is required")
	case c.Identity == "" || len(c.Ring)+1+len(c.Identity) > 253 || !regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`).MatchString(c.Identity):
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

// observed is what this member knows of another's Lease: its claim, its
// resourceVersion, when that version was first seen here, and the
// duration it promised.
type observed struct {
	claim    ring.Set
	rv       string
	seen     time.Time
	duration time.Duration
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

	mu        sync.Mutex
	peers     map[string]observed // by identity, self excluded
	claim     ring.Set            // published
	target    ring.Set
	lease     *coordinationv1.Lease // last written
	deadline  time.Time             // writes stop here
	abandon   bool                  // stop without releasing the Lease
	covers    []*sharded            // informers narrowed to the cover
	cover     ring.Set
	coverSet  chan struct{} // closed once cover is first set
	serverSet bool
	server    bool // the API server honours the shard selector
	handovers map[string]int
}

// New returns a member, validating cfg.
func New(cfg Config) (*Member, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Member{
		cfg:       cfg,
		name:      cfg.Ring + "-" + cfg.Identity,
		sel:       labels.SelectorFromSet(labels.Set{RingLabel: cfg.Ring}),
		wake:      make(chan struct{}, 1),
		peers:     map[string]observed{},
		coverSet:  make(chan struct{}),
		handovers: map[string]int{},
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
}

// Status returns what the member knows now.
func (m *Member) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := 1
	now := time.Now()
	for _, p := range m.peers {
		if now.Sub(p.seen) < p.duration {
			live++
		}
	}
	w, _ := m.gate.Writing()
	if !now.Before(m.deadline) {
		w = nil
	}
	return Status{
		Identity: m.cfg.Identity, Members: live, Target: m.target, Claim: m.claim, Writing: w,
		ServerSide: m.server, Known: m.serverSet, Gained: m.handovers["gained"], Lost: m.handovers["lost"],
	}
}

func (m *Member) poke() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// Start runs the membership until ctx ends: it creates this member's
// Lease (or takes over its own from an earlier run, claiming nothing),
// watches the ring's Leases, renews its own each renew period and runs
// the handover. When ctx ends it stops writing, waits for its holds to
// end (at most the lease duration) and deletes its Lease, so the others
// take its part at once; unless [Member.Abandon] was called, or a hold
// outlived the wait: then its Lease is left to expire. It returns nil
// once ctx ends, or the error that kept it from joining.
func (m *Member) Start(ctx context.Context) error {
	log := m.cfg.Logger.WithValues("ring", m.cfg.Ring, "identity", m.cfg.Identity)
	leases := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace)
	lw := &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = m.sel.String()
			return leases.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = m.sel.String()
			return leases.Watch(ctx, o)
		},
	}
	// A client that cannot stream a list (client-go's fake) says so, and
	// the reflector lists instead.
	inf := toolscache.NewSharedIndexInformer(toolscache.ToListWatcherWithWatchListSemantics(lw, m.cfg.Client), &coordinationv1.Lease{}, 0, toolscache.Indexers{})
	if _, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { m.observe(obj, false) },
		UpdateFunc: func(_, obj any) { m.observe(obj, false) },
		DeleteFunc: func(obj any) { m.observe(obj, true) },
	}); err != nil {
		return err
	}
	infCtx, stopInf := context.WithCancel(context.WithoutCancel(ctx))
	defer stopInf()
	go inf.RunWithContext(infCtx)
	if !toolscache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil
	}
	if err := m.join(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("shard: join ring %s: %w", m.cfg.Ring, err)
	}
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
			if err := m.publish(ctx, claim); err != nil && ctx.Err() == nil {
				log.Error(err, "renew the Lease")
			}
		}
		pendingStop = m.step(ctx, log, pendingStop)
	}
}

// step runs one round of the handover and returns what is stopped but
// still claimed.
func (m *Member) step(ctx context.Context, log logr.Logger, pendingStop ring.Set) ring.Set {
	m.mu.Lock()
	fresh := time.Now().Before(m.deadline)
	claim, deadline := m.claim, m.deadline
	var live []string
	var peers []ring.Peer
	now := time.Now()
	for id, p := range m.peers {
		if now.Sub(p.seen) < p.duration {
			live = append(live, id)
			peers = append(peers, ring.Peer{ID: id, Claim: p.claim})
		}
	}
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
			if err := m.publish(ctx, claim.Minus(pendingStop)); err == nil {
				log.Info("released a part", "part", pendingStop.String())
				pendingStop = nil
			}
		}
	}
	m.setCover(target.Union(m.currentClaim()))
	m.probe(ctx)
	if take.Empty() || !fresh {
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
// server, withdraws what another live member claims too, and writes for
// the rest.
func (m *Member) take(ctx context.Context, log logr.Logger, take ring.Set) error {
	claim := m.currentClaim()
	if err := m.publish(ctx, claim.Union(take)); err != nil {
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
		m.withdraw(ctx, take)
		return err
	}
	now := time.Now()
	var others []ring.Peer
	m.mu.Lock()
	for _, l := range list.Items {
		id := ptr.Deref(l.Spec.HolderIdentity, "")
		if l.Name == m.name || id == "" {
			continue
		}
		if p, ok := m.peers[id]; ok && p.rv == l.ResourceVersion && now.Sub(p.seen) >= p.duration {
			continue // expired as seen, and not renewed since
		}
		c, err := ring.Parse(l.Annotations[ClaimAnnotation])
		if err != nil {
			c = ring.Full() // unreadable: it may claim anything
		}
		others = append(others, ring.Peer{ID: id, Claim: c})
	}
	m.mu.Unlock()
	valid := ring.Validate(take, others)
	if lost := take.Minus(valid); !lost.Empty() {
		log.Info("withdrew a claim another member made first", "part", lost.String())
		m.withdraw(ctx, lost)
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

// withdraw publishes the claim without part; a failure leaves it to the
// next renewal, which publishes the claim as it is then.
func (m *Member) withdraw(ctx context.Context, part ring.Set) {
	m.mu.Lock()
	m.claim = m.claim.Minus(part)
	claim := m.claim
	m.mu.Unlock()
	_ = m.publish(ctx, claim)
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

// join creates this member's Lease claiming nothing, or takes over the
// one an earlier run with this identity left, claiming nothing.
func (m *Member) join(ctx context.Context) error {
	leases := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace)
	for {
		send := time.Now()
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{
				Name: m.name, Namespace: m.cfg.Namespace,
				Labels:      map[string]string{RingLabel: m.cfg.Ring},
				Annotations: map[string]string{ClaimAnnotation: ""},
			},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity:       ptr.To(m.cfg.Identity),
				LeaseDurationSeconds: ptr.To(int32(math.Ceil(m.cfg.LeaseDuration.Seconds()))),
				AcquireTime:          ptr.To(metav1.NewMicroTime(send)),
				RenewTime:            ptr.To(metav1.NewMicroTime(send)),
			},
		}
		got, err := leases.Create(ctx, l, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			old, gerr := leases.Get(ctx, m.name, metav1.GetOptions{})
			if gerr != nil {
				return gerr
			}
			l.ResourceVersion = old.ResourceVersion
			got, err = leases.Update(ctx, l, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				continue
			}
		}
		if err != nil {
			return err
		}
		m.mu.Lock()
		m.lease, m.claim, m.deadline = got, nil, send.Add(m.cfg.LeaseDuration-m.cfg.RenewPeriod)
		m.mu.Unlock()
		return nil
	}
}

// publish writes this member's Lease with claim and a new renewTime: a
// renewal. The write carries the resourceVersion of the Lease last
// written. A renewal that completes before the current deadline moves
// the deadline to its start plus the lease duration less a renew period.
// Past the deadline the others may have judged this member expired and
// taken its part: it stops writing for everything and publishes an empty
// claim instead, to take its part again through the handover.
func (m *Member) publish(ctx context.Context, claim ring.Set) error {
	leases := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace)
	for {
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
		l.Annotations[ClaimAnnotation] = claim.String()
		l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(send))
		got, err := leases.Update(ctx, l, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			// Another writer of this member's Lease (an earlier run still
			// stopping, or an operator): start again from nothing.
			m.stopAll()
			if jerr := m.join(ctx); jerr != nil {
				return errors.Join(err, jerr)
			}
			return err
		}
		if err != nil {
			return err
		}
		done := time.Now()
		m.mu.Lock()
		m.lease, m.claim = got, claim
		if !lapsed && !done.Before(m.deadline) {
			// Completed past the deadline: publish the empty claim.
			m.mu.Unlock()
			m.stopAll()
			continue
		}
		m.deadline = send.Add(m.cfg.LeaseDuration - m.cfg.RenewPeriod)
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

// leave stops writing, waits for the holds, and deletes the Lease unless
// abandoned.
func (m *Member) leave(log logr.Logger) {
	m.gate.Set(nil, nil, time.Time{})
	m.mu.Lock()
	abandon := m.abandon
	m.mu.Unlock()
	if abandon {
		log.Info("left the ring without releasing the Lease; it expires")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.LeaseDuration)
	defer cancel()
	if err := m.gate.Drain(ctx, ring.Full()); err != nil {
		log.Info("left the ring with a write in flight; the Lease expires")
		return
	}
	m.mu.Lock()
	rv := m.lease.ResourceVersion
	m.mu.Unlock()
	err := m.cfg.Client.CoordinationV1().Leases(m.cfg.Namespace).Delete(ctx, m.name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{ResourceVersion: &rv},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		log.Error(err, "release the Lease; it expires")
		return
	}
	log.Info("left the ring and released the Lease")
}

// observe records a peer's Lease as seen now, or its deletion.
func (m *Member) observe(obj any, deleted bool) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj, deleted = d.Obj, true
	}
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l.Name == m.name {
		return
	}
	id := ptr.Deref(l.Spec.HolderIdentity, "")
	if id == "" {
		return
	}
	m.mu.Lock()
	if deleted {
		delete(m.peers, id)
	} else {
		p := m.peers[id]
		if p.rv != l.ResourceVersion {
			c, err := ring.Parse(l.Annotations[ClaimAnnotation])
			if err != nil {
				c = ring.Full() // unreadable: it may claim anything
			}
			d := time.Duration(ptr.Deref(l.Spec.LeaseDurationSeconds, 0)) * time.Second
			p = observed{claim: c, rv: l.ResourceVersion, seen: time.Now(), duration: max(d, m.cfg.LeaseDuration)}
		}
		m.peers[id] = p
	}
	m.mu.Unlock()
	m.poke()
}

// nextExpiry returns when the next live peer's Lease expires as seen, or
// zero.
func (m *Member) nextExpiry() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	var next time.Time
	now := time.Now()
	for _, p := range m.peers {
		if e := p.seen.Add(p.duration); e.After(now) && (next.IsZero() || e.Before(next)) {
			next = e
		}
	}
	return next
}

// Peers returns the identities of the live members, this one included,
// sorted.
func (m *Member) Peers() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	ids := []string{m.cfg.Identity}
	now := time.Now()
	for id, p := range m.peers {
		if now.Sub(p.seen) < p.duration {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
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
