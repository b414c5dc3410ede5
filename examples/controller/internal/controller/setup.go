package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/metrics"
	"leasekit.dev/examples/controller/internal/ring"
	"leasekit.dev/examples/controller/internal/shard"
	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
)

// Config is what [Setup] needs.
type Config struct {
	// PlatformDir is the directory the Publisher owns: emptied at boot,
	// one subdirectory per generation.
	PlatformDir string

	// Registerer receives the metrics; nil means controller-runtime's
	// metrics.Registry, which the manager's metrics server serves.
	Registerer prometheus.Registerer

	// Logger receives the Publisher's log; nil means none.
	Logger *slog.Logger

	// NoSync turns the layout's durability off, for a platform directory
	// on a disk wiped at boot (an emptyDir).
	NoSync bool

	// Evaluator builds platforms and renders Releases; nil means
	// kernel.New(), in-process. An *isolate.Workers runs builds and
	// renders in worker processes with time and memory budgets, and its
	// metrics are registered too.
	Evaluator platform.Evaluator

	// WarmStandby boots the Publisher on every replica, elected or not,
	// and keeps a replica that is not elected warm through a [Standby]:
	// it follows the Platform and renders every Release into its memo,
	// so that on election it only writes status. False: only the elected
	// replica boots its Publisher, and it starts from nothing.
	WarmStandby bool

	// Ring, when set, splits the Releases among the replicas of a ring
	// (the manager must not elect a leader): every replica boots its
	// Publisher at start and publishes the Platform into its own store;
	// each renders the Releases of its target and writes the status of
	// those the ring lets it write for, and the one that writes for the
	// Platform's UID writes the Platform's status and events. The
	// manager's cache must narrow the Release informer to the member's
	// cover (cache.Options.NewInformer = [RingInformer]). WarmStandby is
	// then ignored: the ring is the standby.
	Ring *shard.Member

	// StatusKey names the Secret holding the key of the Releases' status
	// MACs ([StatusKey]), in the controller's own namespace; created on
	// first start when absent. An empty Name means DefaultStatusKeyName,
	// an empty Namespace "default".
	StatusKey types.NamespacedName

	// StatusKeyRefresh is how often the Secret is read again (a deleted
	// one is made again with a new key); zero means
	// DefaultStatusKeyRefresh.
	StatusKeyRefresh time.Duration
}

// Shard is what a reconciler asks of a ring: a hold on an object's hash
// for one reconcile. A *shard.Member is one.
type Shard interface {
	Hold(uid types.UID) *ring.Hold
}

// RingInformer returns, for the manager's cache.Options.NewInformer, the
// constructor that narrows the Release informer to member's cover.
func RingInformer(member *shard.Member) func(toolscache.ListerWatcher, runtime.Object, time.Duration, toolscache.Indexers) toolscache.SharedIndexInformer {
	return member.NewInformer(func(obj runtime.Object) bool {
		_, ok := obj.(*v1alpha1.Release)
		return ok
	})
}

// Wiring is what [Setup] added to the manager.
type Wiring struct {
	Publisher *platform.Publisher
	Metrics   *metrics.Metrics
	Platform  *PlatformReconciler
	Release   *ReleaseReconciler
	Standby   *Standby // nil without Config.WarmStandby
	StatusKey *StatusKey

	runnable *electedOnly
	elected  <-chan struct{}
}

// Ready is a readiness check (for the manager's AddReadyzCheck): once this
// replica is elected, it fails until the Publisher has booted (emptied its
// directory) and the status key's first load succeeded (every Release
// waits for it), so an elected replica is ready only when it can publish
// and render. A cold standby (not elected, without Config.WarmStandby) is
// ready: it serves nothing, and stands by to take over (a standby held
// unready would stall a rolling update). A warm standby is ready once its
// Publisher has booted, the status key is loaded, and it has caught up
// with the Platform it last saw ([Standby.CaughtUp]).
func (w *Wiring) Ready(r *http.Request) error {
	select {
	case <-w.elected:
	default:
		if w.Standby == nil {
			return nil
		}
		if err := w.keyLoaded(); err != nil {
			return err
		}
		ctx := context.Background()
		if r != nil {
			ctx = r.Context()
		}
		ctx, cancel := context.WithTimeout(ctx, caughtUpTimeout)
		defer cancel()
		return w.Standby.CaughtUp(ctx)
	}
	if !w.runnable.booted.Load() {
		return errors.New("controller: elected, but the platform publisher has not booted yet")
	}
	return w.keyLoaded()
}

// keyLoaded returns nil once the status key's first load succeeded, or
// when there is no status key; otherwise an error saying what waits.
func (w *Wiring) keyLoaded() error {
	if w.StatusKey == nil {
		return nil
	}
	select {
	case <-w.StatusKey.Loaded():
		return nil
	default:
		return fmt.Errorf("controller: the status key's Secret %s has not been read yet (see the status-key log): every Release waits for it", w.StatusKey.Secret)
	}
}

// Setup adds to mgr the Publisher (a runnable that needs leader election:
// it boots, emptying PlatformDir, when this replica is elected; with
// Config.WarmStandby it boots on every replica at start), the Platform and
// Release controllers, the [Standby]'s with Config.WarmStandby, and the
// metrics.
func Setup(mgr ctrl.Manager, cfg Config) (*Wiring, error) {
	if cfg.PlatformDir == "" {
		return nil, errors.New("controller: the platform directory is required")
	}
	reg := cfg.Registerer
	if reg == nil {
		reg = crmetrics.Registry
	}
	m := metrics.New()
	// Renders evaluate at once as many as the kernel evaluates at once:
	// one per worker process, which an *isolate.Workers bounds itself (a
	// render past them waits for one), or one in this process.
	renders, ev := 1, cfg.Evaluator
	if ws, ok := ev.(*isolate.Workers); ok {
		renders = ws.Stats().Size
	} else {
		if ev == nil {
			ev = kernel.New()
		}
		ev = &evaluating{Evaluator: ev, turns: make(chan struct{}, renders)}
	}
	pub := platform.NewPublisher(cfg.PlatformDir, platform.PublisherOptions{
		Logger:    cfg.Logger,
		NoSync:    cfg.NoSync,
		OnPublish: m.ObservePublish,
		OnReclaim: m.ObserveReclaim,
		Evaluator: ev,
	})
	if err := m.Register(reg, pub.Stats); err != nil {
		return nil, fmt.Errorf("controller: register metrics: %w", err)
	}
	if ws, ok := cfg.Evaluator.(*isolate.Workers); ok {
		if err := m.RegisterWorkers(reg, ws.Stats); err != nil {
			return nil, fmt.Errorf("controller: register worker metrics: %w", err)
		}
	}
	if cfg.Ring != nil {
		cfg.WarmStandby = false
	}
	runnable := &electedOnly{pub: pub, warm: cfg.WarmStandby || cfg.Ring != nil}
	if err := mgr.Add(runnable); err != nil {
		return nil, fmt.Errorf("controller: add the publisher: %w", err)
	}

	// The Platform reconciler tells the Release controller when the served
	// generation changes. One pending notice is enough: the Release
	// controller lists every Release when it takes the notice, after the
	// change, so a notice dropped because one is pending loses nothing.
	changed := make(chan event.GenericEvent, 1)
	notify := func() {
		select {
		case changed <- event.GenericEvent{Object: &v1alpha1.Platform{}}:
		default:
		}
	}

	w := &Wiring{
		runnable:  runnable,
		elected:   mgr.Elected(),
		Publisher: pub,
		Metrics:   m,
		Platform: &PlatformReconciler{
			Client:    mgr.GetClient(),
			Publisher: pub,
			Recorder:  mgr.GetEventRecorder("platform-controller"),
			Changed:   notify,
		},
		Release: &ReleaseReconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Publisher: pub,
			Evaluator: cfg.Evaluator,
			Recorder:  mgr.GetEventRecorder("release-controller"),
			Observe:   m.ObserveRender,
		},
	}
	w.Release.Platforms = w.Platform
	secret := cfg.StatusKey
	if secret.Name == "" {
		secret.Name = DefaultStatusKeyName
	}
	if secret.Namespace == "" {
		secret.Namespace = "default"
	}
	w.StatusKey = &StatusKey{
		Reader: mgr.GetAPIReader(), Writer: mgr.GetClient(), Secret: secret,
		Recorder: mgr.GetEventRecorder("release-controller"),
		Log:      mgr.GetLogger().WithName("status-key"),
		Refresh:  cfg.StatusKeyRefresh,
		OnChange: func() {
			// Verdicts taken from statuses under the old key are trusted
			// no more: every Release is reconciled again, once.
			w.Release.forgetVerdicts()
			notify()
		},
	}
	w.Release.Key = w.StatusKey
	if err := mgr.Add(w.StatusKey); err != nil {
		return nil, fmt.Errorf("controller: add the status key: %w", err)
	}
	// With a ring: what this replica comes to write for is reconciled
	// again (rendered already, it is only written); what it stops writing
	// for is forgotten as written here.
	gained := make(chan event.GenericEvent, 1)
	platformGained := make(chan event.GenericEvent, 1)
	if cfg.Ring != nil {
		w.Release.Shard, w.Platform.Shard = cfg.Ring, cfg.Ring
		cfg.Ring.OnChange(func(g, lost ring.Set) {
			if !lost.Empty() {
				w.Release.forgetWritten(lost)
			}
			if g.Empty() {
				return
			}
			for _, ch := range []chan event.GenericEvent{gained, platformGained} {
				select {
				case ch <- event.GenericEvent{Object: &v1alpha1.Platform{ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PlatformName}}}:
				default:
				}
			}
		})
		if err := mgr.Add(cfg.Ring); err != nil {
			return nil, fmt.Errorf("controller: add the ring member: %w", err)
		}
		c := mgr.GetClient()
		if err := cfg.Ring.RegisterMetrics(reg, func() int { return ownedReleases(c, cfg.Ring) }); err != nil {
			return nil, fmt.Errorf("controller: register ring metrics: %w", err)
		}
	}
	// A warm standby warms the leader's controllers too
	// (controller-runtime's EnableWarmup): their sources start and fill
	// their queues on every replica, so that once elected the workers
	// start at once, without waiting for their event handlers to sync.
	// Nothing is reconciled before the election.
	warmup := ptr.To(cfg.WarmStandby)
	err := ctrl.NewControllerManagedBy(mgr).
		Named("platform").
		WithOptions(crcontroller.Options{EnableWarmup: warmup}).
		For(&v1alpha1.Platform{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(platformGained, &handler.EnqueueRequestForObject{})).
		Complete(w.Platform)
	if err != nil {
		return nil, fmt.Errorf("controller: platform controller: %w", err)
	}
	c := mgr.GetClient()
	// Release reconciles run at once releaseReconciles times as many as
	// renders evaluate at once. A render the memo answers (on a warm
	// standby just elected, every render) evaluates nothing: its
	// reconcile's time is its status write, a round trip to the API
	// server, and with only as many reconciles as evaluations the writes
	// would go one per evaluation at a time. Evaluations stay bounded: a
	// render past them waits for its turn.
	err = ctrl.NewControllerManagedBy(mgr).
		Named("release").
		WithOptions(crcontroller.Options{MaxConcurrentReconciles: releaseReconciles * renders, EnableWarmup: warmup}).
		For(&v1alpha1.Release{}, builder.WithPredicates(predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, notTheVerdict(w.Release)))).
		WatchesRawSource(source.Channel(changed, handler.EnqueueRequestsFromMapFunc(
			func(ctx context.Context, _ client.Object) []reconcile.Request {
				return allReleases(ctx, c)
			}))).
		WatchesRawSource(source.Channel(gained, handler.EnqueueRequestsFromMapFunc(
			func(ctx context.Context, _ client.Object) []reconcile.Request {
				// Every Release in the cache: those this replica does not
				// write for return at once.
				return allReleases(ctx, c)
			}))).
		Complete(w.Release)
	if err != nil {
		return nil, fmt.Errorf("controller: release controller: %w", err)
	}
	if cfg.WarmStandby {
		w.Standby, err = setupStandby(mgr, pub, w.Platform, w.Release, runnable.booted.Load, renders)
		if err != nil {
			return nil, err
		}
	}
	return w, nil
}

// notTheVerdict passes the update of a Release whose new status is not
// the verdict r holds for it, signed under r.Key: a forgery, a status
// cleared, a verdict of an earlier key, or one the controller signed once
// and someone wrote back (an earlier spec generation, an earlier
// platform), so that it is reconciled, evaluated and corrected at once.
// The controller's own writes of the verdict it holds do not pass; those
// it writes unsigned (PlatformNotReady, or with no key held) and those of
// another replica or an earlier leader do, and reconcile once, writing
// nothing.
func notTheVerdict(r *ReleaseReconciler) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			rel, ok := e.ObjectNew.(*v1alpha1.Release)
			if !ok {
				return false
			}
			return !r.holdsVerdict(client.ObjectKeyFromObject(rel), rel.UID, &rel.Status)
		},
	}
}

// ownedReleases counts the Releases in the cache whose status member
// writes now.
func ownedReleases(c client.Client, member *shard.Member) int {
	var list v1alpha1.ReleaseList
	if err := c.List(context.Background(), &list); err != nil {
		return 0
	}
	writing := member.Status().Writing
	n := 0
	for _, rel := range list.Items {
		if writing.Contains(ring.Hash(string(rel.UID))) {
			n++
		}
	}
	return n
}

// releaseReconciles is how many Release reconciles run at once per render
// evaluating at once. While all evaluations are busy, as many reconciles
// as there are evaluations wait for a turn, and the rest write statuses
// or wait for one too. A reconcile's wait for a turn counts against its
// timeout: at most releaseReconciles-1 renders, each bounded by the time
// budget, come before it.
const releaseReconciles = 4

// evaluating bounds the renders an evaluator in this process runs at once,
// as an *isolate.Workers bounds them by its size: a render past the bound
// waits for a turn as long as its ctx allows, and returns ctx's error
// otherwise. Builds are not bounded: the Publisher runs one at a time.
type evaluating struct {
	platform.Evaluator
	turns chan struct{}
}

// Render waits for a turn, then renders with the evaluator.
func (e *evaluating) Render(ctx context.Context, in kernel.RenderInput) (kernel.RenderOutput, error) {
	select {
	case e.turns <- struct{}{}:
	case <-ctx.Done():
		return kernel.RenderOutput{}, ctx.Err()
	}
	defer func() { <-e.turns }()
	return e.Evaluator.Render(ctx, in)
}

// allReleases lists every Release, for a change of the served platform.
func allReleases(ctx context.Context, c client.Client) []reconcile.Request {
	var list v1alpha1.ReleaseList
	if err := c.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "list releases after a platform change")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, rel := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&rel)})
	}
	return reqs
}

// electedOnly runs the Publisher only on the elected replica: a replica
// that is not elected leaves its platform directory untouched. With warm
// set it runs on every replica, for its Standby.
type electedOnly struct {
	pub    *platform.Publisher
	warm   bool
	booted atomic.Bool // Boot succeeded
}

// Start boots the Publisher, then runs its reclaim loop until ctx ends.
func (e *electedOnly) Start(ctx context.Context) error {
	if err := e.pub.Boot(); err != nil {
		return err
	}
	e.booted.Store(true)
	return e.pub.Run(ctx)
}

// NeedLeaderElection reports true, so the Publisher starts once elected,
// unless it is warm: then it starts on every replica.
func (e *electedOnly) NeedLeaderElection() bool { return !e.warm }
