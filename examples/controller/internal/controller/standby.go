package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"leasekit.dev/publish"
)

// Standby keeps a replica that is not elected warm: it follows the
// Platform through the manager's cache, publishing each generation into
// the replica's own Publisher, and renders every Release into the
// Publisher's render memo, writing nothing to the API server: no status,
// no event, and none of the leader's metrics (its renders are not
// observed in render_seconds). Once elected, the replica's reconcilers
// find the Platform Unchanged and the renders in the memo, and only write
// status; Standby does nothing more while this replica leads.
//
// Its two controllers run on every replica (they do not need leader
// election) and return at once on the leader.
type Standby struct {
	client  client.Client
	pub     *platform.Publisher
	elected <-chan struct{}
	booted  func() bool
	notify  func()
	// platforms, when set, is the leader's Platform reconciler in this
	// process: the Publisher is theirs together, so it learns what the
	// Standby publishes, refuses and forgets, and a Release of the new
	// leader need not wait for it to publish again what is served.
	platforms *PlatformReconciler
	// release, when set, is the leader's Release reconciler in this
	// process: a Release whose status holds a signed verdict for its
	// current inputs and dependencies, or one the reconciler decided, is
	// not evaluated here either.
	release *ReleaseReconciler

	mu sync.Mutex
	// served is the UID of the object whose generation the Publisher
	// serves, as in PlatformReconciler.
	served types.UID
	// done is the Platform generation (of the object with UID doneUID)
	// last published or refused here; zero with doneUID empty when no
	// Platform was seen, or the last was deleted.
	doneUID types.UID
	done    int64
	// tried holds, per Release, the object (UID) and the generation of
	// its spec last rendered here and the platform it was rendered
	// against, as the ReleaseReconciler keys its verdicts; a spec killed
	// past a budget is not rendered again until it changes, whatever the
	// platform.
	tried map[types.NamespacedName]tried
	// renders counts the renders this Standby began (memo hits included).
	renders int
}

type tried struct {
	uid        types.UID
	gen        int64
	against    *kernel.Platform
	overBudget bool
}

// leading reports whether this replica is elected.
func (s *Standby) leading() bool {
	select {
	case <-s.elected:
		return true
	default:
		return false
	}
}

// CaughtUp returns nil once this replica's Publisher has booted and has
// published (or refused, as the leader would) the generation of the
// Platform in the manager's cache, the one it last saw; otherwise an error
// saying what it waits for. It does not block beyond a read of the cache.
func (s *Standby) CaughtUp(ctx context.Context) error {
	if !s.booted() {
		return errors.New("controller: the platform publisher has not booted yet")
	}
	var p v1alpha1.Platform
	err := s.client.Get(ctx, client.ObjectKey{Name: v1alpha1.PlatformName}, &p)
	s.mu.Lock()
	doneUID, done := s.doneUID, s.done
	s.mu.Unlock()
	switch {
	case apierrors.IsNotFound(err):
		if doneUID != "" {
			return errors.New("controller: following: the Platform's delete is not yet forgotten here")
		}
		return nil
	case err != nil:
		return fmt.Errorf("controller: following: read the Platform from the cache: %w", err)
	case !p.DeletionTimestamp.IsZero():
		return nil
	case doneUID != p.UID || done != p.Generation:
		return fmt.Errorf("controller: following: Platform generation %d not yet published here (last: %d)", p.Generation, done)
	}
	return nil
}

// Rendered returns the number of Releases this replica has rendered (or
// found refused past a budget) at their current spec against the
// platform it serves now, and the renders it has begun in all.
func (s *Standby) Rendered() (current, renders int) {
	rec, ok := s.pub.Store().Generated()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tried {
		if t.overBudget || ok && t.against == rec.Platform {
			current++
		}
	}
	return current, s.renders
}

// reconcilePlatform publishes the Platform's generation into this
// replica's Publisher, or forgets it when the object is gone. It writes
// nothing: a spec that does not build is the leader's to report. A
// transient failure returns an error, so the request is retried with
// backoff.
func (s *Standby) reconcilePlatform(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if s.leading() || req.Name != v1alpha1.PlatformName || req.Namespace != "" {
		return ctrl.Result{}, nil
	}
	var p v1alpha1.Platform
	err := s.client.Get(ctx, req.NamespacedName, &p)
	if apierrors.IsNotFound(err) || err == nil && !p.DeletionTimestamp.IsZero() {
		s.forget()
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	s.mu.Lock()
	other := s.served != "" && s.served != p.UID
	s.mu.Unlock()
	if other {
		s.forget()
	}
	before := s.pub.Store().Generation()
	files, skew, err := moduleFiles(&p.Spec)
	if err == nil {
		_, err = s.pub.Publish(ctx, p.Generation, files, skew)
	}
	if s.pub.Store().Generation() != before {
		s.notify()
	}
	var ie *platformmodule.InputError
	var stale *publish.StaleError[int64]
	switch {
	case err == nil:
		s.mu.Lock()
		s.served = p.UID
		s.mu.Unlock()
	case errors.As(err, &ie), errors.As(err, &stale), buildFailed(err):
		// What the leader refuses too (buildFailed classifies as the
		// PlatformReconciler does, a build past a budget included): the
		// generation served before keeps serving here as there.
	default:
		return ctrl.Result{}, fmt.Errorf("follow platform generation %d: %w", p.Generation, err)
	}
	s.mu.Lock()
	s.doneUID, s.done = p.UID, p.Generation
	s.mu.Unlock()
	if s.platforms != nil {
		s.platforms.followed(p.UID, p.Generation, err == nil)
	}
	return ctrl.Result{}, nil
}

// forget drops the served platform, if any.
func (s *Standby) forget() {
	s.mu.Lock()
	s.served, s.doneUID, s.done = "", "", 0
	s.mu.Unlock()
	if s.platforms != nil {
		s.platforms.forgotten()
	}
	if s.pub.Store().Generation() != 0 {
		s.pub.Forget()
		s.notify()
	}
}

// reconcileRelease renders the Release against the platform this
// replica's Publisher serves, so that the render is in its memo when this
// replica is elected; the output is dropped. It renders a spec once per
// platform; a spec killed past a budget not again until it changes; and
// none whose status holds a failure for its current inputs, which the
// leader's Release reconciler keeps ([ReleaseReconciler.Reconcile]): a
// verdict it decided, or one a Release's status holds under a MAC that
// verifies, for the same inputs and dependencies. Its
// errors are classified as the ReleaseReconciler classifies them
// ([classify]): a failure that says nothing of the spec (a worker that
// died without answering, the platform's directory changed, the Publisher
// not booted, the context ending) records nothing and returns an error,
// so the request is retried with backoff.
func (s *Standby) reconcileRelease(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if s.leading() {
		return ctrl.Result{}, nil
	}
	var rel v1alpha1.Release
	if err := s.client.Get(ctx, req.NamespacedName, &rel); err != nil {
		if apierrors.IsNotFound(err) {
			s.mu.Lock()
			delete(s.tried, req.NamespacedName)
			s.mu.Unlock()
			if s.release != nil {
				s.release.forget(req.NamespacedName)
			}
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	rec, release, ok := s.pub.Store().Lease()
	defer release()
	if !rel.DeletionTimestamp.IsZero() || !ok {
		return ctrl.Result{}, nil // nothing to render against: the platform's notice comes
	}
	s.mu.Lock()
	t, seen := s.tried[req.NamespacedName]
	s.mu.Unlock()
	if seen && t.uid == rel.UID && t.gen == rel.Generation && (t.overBudget || t.against == rec.Platform) {
		return ctrl.Result{}, nil
	}
	inst := releaseInstance(&rel)
	if s.release != nil {
		if err := s.release.keyLoaded(ctx); err != nil {
			return ctrl.Result{}, fmt.Errorf("render release %s while following: %w", req.NamespacedName, err)
		}
		if v := s.release.verdict(req.NamespacedName, &rel, s.release.inputs(ctx, inst, rec, true)); v != nil {
			s.mu.Lock()
			if s.tried == nil {
				s.tried = make(map[types.NamespacedName]tried)
			}
			s.tried[req.NamespacedName] = tried{uid: rel.UID, gen: rel.Generation, against: rec.Platform, overBudget: v.over}
			s.mu.Unlock()
			return ctrl.Result{}, nil
		}
	}
	s.mu.Lock()
	s.renders++
	s.mu.Unlock()
	_, _, err := s.pub.RenderLeased(ctx, rec, inst)
	o := classify(err)
	switch {
	case errors.Is(err, platform.ErrNotReady):
		return ctrl.Result{}, nil
	case o == transient || ctx.Err() != nil:
		return ctrl.Result{}, fmt.Errorf("render release %s while following: %w", req.NamespacedName, errors.Join(err, ctx.Err()))
	}
	s.mu.Lock()
	if s.tried == nil {
		s.tried = make(map[types.NamespacedName]tried)
	}
	s.tried[req.NamespacedName] = tried{uid: rel.UID, gen: rel.Generation, against: rec.Platform, overBudget: o == overBudget}
	s.mu.Unlock()
	return ctrl.Result{}, nil
}

// setupStandby adds the Standby's two controllers to mgr: they run on
// every replica and do their work only while it is not elected. platforms
// and release are the leader's Platform and Release reconcilers on the
// same Publisher.
func setupStandby(mgr ctrl.Manager, pub *platform.Publisher, platforms *PlatformReconciler, release *ReleaseReconciler, booted func() bool, renders int) (*Standby, error) {
	changed := make(chan event.GenericEvent, 1)
	s := &Standby{
		client:    mgr.GetClient(),
		pub:       pub,
		elected:   mgr.Elected(),
		booted:    booted,
		platforms: platforms,
		release:   release,
		notify: func() {
			select {
			case changed <- event.GenericEvent{Object: &v1alpha1.Platform{}}:
			default:
			}
		},
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named("platform-standby").
		WithOptions(crcontroller.Options{NeedLeaderElection: ptr.To(false)}).
		For(&v1alpha1.Platform{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(reconcile.Func(s.reconcilePlatform))
	if err != nil {
		return nil, fmt.Errorf("controller: platform standby controller: %w", err)
	}
	c := mgr.GetClient()
	err = ctrl.NewControllerManagedBy(mgr).
		Named("release-standby").
		WithOptions(crcontroller.Options{NeedLeaderElection: ptr.To(false), MaxConcurrentReconciles: renders}).
		For(&v1alpha1.Release{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(changed, handler.EnqueueRequestsFromMapFunc(
			func(ctx context.Context, _ client.Object) []reconcile.Request {
				return allReleases(ctx, c)
			}))).
		Complete(reconcile.Func(s.reconcileRelease))
	if err != nil {
		return nil, fmt.Errorf("controller: release standby controller: %w", err)
	}
	return s, nil
}

// caughtUpTimeout bounds the cache read of a readiness check.
const caughtUpTimeout = 2 * time.Second
