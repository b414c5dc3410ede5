package controller

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/ring"
	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"leasekit.dev/publish"
)

// OverlayFile is the file of the generated module that holds
// spec.overlay, after a "package platform" line.
const OverlayFile = "overlay.cue"

// PlatformReconciler publishes the Platform named [v1alpha1.PlatformName]
// through Publisher and records the outcome in its status and events.
type PlatformReconciler struct {
	Client    client.Client
	Publisher *platform.Publisher
	Recorder  events.EventRecorder

	// Shard, when set, names the one replica of a ring that writes the
	// Platform's status and events: the one that writes for its UID's
	// hash. Every replica publishes it into its own store.
	Shard Shard

	// Changed, when set, is called after every reconcile that may have
	// changed the record the Publisher serves (a publish or a forget), or
	// decided a generation not decided before (see Decided), once. It
	// must not block.
	Changed func()

	mu sync.Mutex
	// served is the UID of the object whose generation the Publisher
	// serves; generations count from 1 again in a new object.
	served types.UID
	// decidedUID and decidedGen are the object, and the latest generation
	// of it, this process has reached an outcome for (see Decided), when
	// decided is set.
	decided    bool
	decidedUID types.UID
	decidedGen int64
}

// Decided reports whether this process has reached an outcome for
// generation gen of the Platform object uid, or for a later one: it
// published it or refused it (its spec invalid, its build failed or went
// past a budget, the generation stale), here or in its [Standby], or its
// publish failed for a transient reason while an earlier generation of
// the same object serves, which serves on until the retry. Until then a
// Release waits, rather than report that no platform is served or render
// against a generation about to be replaced.
func (r *PlatformReconciler) Decided(uid types.UID, gen int64) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.decided && r.decidedUID == uid && r.decidedGen >= gen
}

// setDecided records that this process reached an outcome for generation
// gen of uid, and reports whether that is news (another object, or a
// later generation): then Releases waiting for it go on once notified.
func (r *PlatformReconciler) setDecided(uid types.UID, gen int64) (news bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	news = !r.decided || r.decidedUID != uid || r.decidedGen < gen
	if news {
		r.decided, r.decidedUID, r.decidedGen = true, uid, gen
	}
	return news
}

// followed records the outcome a [Standby] on the same Publisher reached
// for generation gen of uid (published tells whether it serves it), and
// notifies Changed when that is news.
func (r *PlatformReconciler) followed(uid types.UID, gen int64, published bool) {
	if published {
		r.setServed(uid)
	}
	if r.setDecided(uid, gen) && r.Changed != nil {
		r.Changed()
	}
}

// Reconcile publishes the Platform's current generation, or forgets the
// platform when the object is gone. A spec the generator refuses or the
// kernel cannot build (its problems, a limit it goes past, a file it may
// not read) sets BuildFailed and Ready=False and returns a
// reconcile.TerminalError: it is not retried, and the next generation
// tries again; the generation served before keeps serving. A build killed
// past a worker's time or memory budget is such a failed build, naming the
// budget. A transient failure (a worker that died without answering, a
// write error) returns an error, so the request is retried with backoff.
// The status is written with the resourceVersion it was computed from; a
// conflict returns an error, retried from a fresh read.
func (r *PlatformReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx)
	if req.Name != v1alpha1.PlatformName || req.Namespace != "" {
		// The API server refuses any other name; a stray request is ignored.
		return ctrl.Result{}, nil
	}
	var p v1alpha1.Platform
	if err := r.Client.Get(ctx, req.NamespacedName, &p); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(ctx)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !p.DeletionTimestamp.IsZero() {
		// Deleted, waiting for another controller's finalizer: serve nothing.
		r.forget(ctx)
		return ctrl.Result{}, nil
	}

	if r.servedOther(p.UID) {
		// Deleted and created again, both seen as one request: the old
		// object's generations say nothing about the new one's.
		r.forget(ctx)
	}
	before := r.Publisher.Store().Generation()
	status := p.Status.DeepCopy()
	status.ObservedGeneration = p.Generation

	files, skew, err := moduleFiles(&p.Spec)
	var rec platform.Generated
	if err == nil {
		rec, err = r.Publisher.Publish(ctx, p.Generation, files, skew)
	}
	if err == nil {
		r.setServed(p.UID)
	}
	changed := r.Publisher.Store().Generation() != before
	if errors.Is(err, platform.ErrNotBooted) {
		// The Publisher boots when the manager starts its runnables (on
		// the elected replica); the retry comes after. Nothing to report.
		return ctrl.Result{}, fmt.Errorf("publish generation %d: %w", p.Generation, err)
	}

	recorder := r.Recorder
	var hold *ring.Hold
	if r.Shard != nil {
		hold = r.Shard.Hold(p.UID)
		defer hold.Done()
		if !hold.Writes() {
			recorder = noEvents{}
		}
	}
	result, retry := r.outcome(&p, status, rec, before, err, recorder)
	// Published, refused, or failed for now: each is a decision. After a
	// failure for now, Releases render against what serves (an earlier
	// generation of this object, or nothing, and they say
	// PlatformNotReady) until the retry publishes, which calls Changed
	// again; a failure that keeps coming back never leaves them unwritten.
	changed = r.setDecided(p.UID, p.Generation) || changed
	if changed && r.Changed != nil {
		r.Changed()
	}
	// With a ring, only the replica that writes for the Platform's hash
	// writes its status; the ring wakes another's reconcile when it
	// comes to write it.
	if hold == nil || hold.Writes() {
		if uerr := r.updateStatus(ctx, &p, status); uerr != nil {
			return ctrl.Result{}, uerr
		}
	}
	if retry != nil && !errors.Is(retry, reconcile.TerminalError(nil)) {
		logger.V(1).Info("publish failed; retrying with backoff", "generation", p.Generation, "error", retry.Error())
	}
	return result, retry
}

// outcome sets status and records events with recorder for the result of
// a publish; it returns the error to retry with, or a terminal error when
// only a new spec can help.
func (r *PlatformReconciler) outcome(p *v1alpha1.Platform, status *v1alpha1.PlatformStatus, rec platform.Generated, before int64, err error, recorder events.EventRecorder) (ctrl.Result, error) {
	gen := p.Generation
	served := r.Publisher.Store().Generation()
	status.PublishedGeneration = served
	if g, ok := r.Publisher.Store().Generated(); ok && g.Platform != nil {
		status.Catalogs = int32(len(g.Platform.Catalogs))
	} else {
		status.Catalogs = 0
	}
	setPublished(status, gen, served)

	var stale *publish.StaleError[int64]
	var ie *platformmodule.InputError
	switch {
	case err == nil:
		set(status, gen, v1alpha1.PlatformBuildFailed, metav1.ConditionFalse, ReasonBuilt, fmt.Sprintf("generation %d built", gen))
		setNotStale(status, gen, served, "")
		set(status, gen, v1alpha1.PlatformReady, metav1.ConditionTrue, ReasonPublished, fmt.Sprintf("serving generation %d", rec.Generation))
		if before != rec.Generation {
			recorder.Eventf(p, nil, "Normal", ReasonPublished, "Publish", "published generation %d (%d catalogs)", rec.Generation, status.Catalogs)
		}
		return ctrl.Result{}, nil

	case errors.As(err, &ie), buildFailed(err):
		reason := ReasonBuildFailed
		if ie != nil {
			reason = ReasonInvalidSpec
		}
		msg := r.relative(describe(err))
		set(status, gen, v1alpha1.PlatformBuildFailed, metav1.ConditionTrue, reason, msg)
		why := "failed to build"
		if ie != nil {
			why = "has an invalid spec"
		}
		setNotStale(status, gen, served, why)
		set(status, gen, v1alpha1.PlatformReady, metav1.ConditionFalse, reason, notReady(gen, served, msg))
		recorder.Eventf(p, nil, "Warning", reason, "Publish", "generation %d: %s", gen, msg)
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("generation %d: %s", gen, msg))

	case errors.As(err, &stale):
		msg := fmt.Sprintf("generation %d is older than the generation %d served", stale.Key, stale.Current)
		set(status, gen, v1alpha1.PlatformStale, metav1.ConditionTrue, ReasonStale, msg)
		recorder.Eventf(p, nil, "Warning", ReasonStale, "Publish", "%s", msg)
		return ctrl.Result{}, nil

	default:
		msg := describe(err)
		setNotStale(status, gen, served, "is not published yet (retrying)")
		set(status, gen, v1alpha1.PlatformReady, metav1.ConditionFalse, "PublishFailed", notReady(gen, served, msg))
		recorder.Eventf(p, nil, "Warning", "PublishFailed", "Publish", "generation %d: %s (retrying)", gen, msg)
		return ctrl.Result{}, fmt.Errorf("publish generation %d: %w", gen, err)
	}
}

// buildFailed reports whether err is one the same spec meets again: the
// kernel's refusal of the module's content ([kernel.IsRefusal]), or a time
// or memory budget its build went past.
func buildFailed(err error) bool {
	return kernel.IsRefusal(err) || classify(err) == overBudget
}

// relative shortens the positions in msg to paths relative to the
// platform directory ("gen-2: overlay.cue:2:7"): the directory is the
// process's own, the generation and file are what a reader needs.
func (r *PlatformReconciler) relative(msg string) string {
	root := filepath.Clean(r.Publisher.Layout().Root)
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	return strings.ReplaceAll(msg, root+string(filepath.Separator), "")
}

// servedOther reports whether the Publisher serves a generation of an
// object other than uid.
func (r *PlatformReconciler) servedOther(uid types.UID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.served != "" && r.served != uid
}

func (r *PlatformReconciler) setServed(uid types.UID) {
	r.mu.Lock()
	r.served = uid
	r.mu.Unlock()
}

// forgotten records that the Publisher serves nothing, and that no
// outcome is reached for any object.
func (r *PlatformReconciler) forgotten() {
	r.mu.Lock()
	r.served, r.decided, r.decidedUID, r.decidedGen = "", false, "", 0
	r.mu.Unlock()
}

// forget drops the served platform, if any.
func (r *PlatformReconciler) forget(ctx context.Context) {
	r.forgotten()
	if r.Publisher.Store().Generation() == 0 {
		return
	}
	r.Publisher.Forget()
	log.FromContext(ctx).Info("platform deleted; forgot the served generation")
	if r.Changed != nil {
		r.Changed()
	}
}

// updateStatus writes status when it differs from the object's, with the
// object's resourceVersion: a conflict returns an error, and the retry
// computes the status again from a fresh read.
func (r *PlatformReconciler) updateStatus(ctx context.Context, p *v1alpha1.Platform, status *v1alpha1.PlatformStatus) error {
	if equality.Semantic.DeepEqual(&p.Status, status) {
		return nil
	}
	p.Status = *status
	if err := r.Client.Status().Update(ctx, p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // deleted meanwhile; the delete event follows
		}
		return fmt.Errorf("update status of platform %s: %w", p.Name, err)
	}
	return nil
}

// moduleFiles generates the platform module spec describes, with its
// overlay, and resolves its skew policy.
func moduleFiles(spec *v1alpha1.PlatformSpec) (platformmodule.Files, kernel.SkewPolicy, error) {
	skew, err := kernel.ParseSkewPolicy(spec.SkewPolicy)
	if err != nil {
		return nil, 0, &platformmodule.InputError{Field: "SkewPolicy", Value: spec.SkewPolicy, Rule: "must be Warn or Refuse"}
	}
	in := platformmodule.Input{Name: spec.Name, Type: spec.Type, Labels: make(map[string]string, len(spec.Labels))}
	for k, v := range spec.Labels {
		in.Labels[k] = string(v)
	}
	for _, c := range spec.Catalogs {
		in.Catalogs = append(in.Catalogs, platformmodule.Catalog{
			Path: c.Path, Version: c.Version, Kinds: c.Kinds, Disabled: c.Disabled,
		})
	}
	files, err := platformmodule.Generate(in)
	if err != nil {
		return nil, 0, err
	}
	if spec.Overlay != "" {
		files[OverlayFile] = []byte("package platform\n" + spec.Overlay)
	}
	return files, skew, nil
}

// setPublished sets the Published condition for the generation served.
func setPublished(status *v1alpha1.PlatformStatus, gen, served int64) {
	if served == 0 {
		set(status, gen, v1alpha1.PlatformPublished, metav1.ConditionFalse, ReasonNotPublished, "no generation is served")
		return
	}
	set(status, gen, v1alpha1.PlatformPublished, metav1.ConditionTrue, ReasonPublished, fmt.Sprintf("serving generation %d", served))
}

// setNotStale sets the Stale condition False for gen, the object's
// generation, saying which generation serves and, when it is not gen,
// why: gen's publish failed for the reason why.
func setNotStale(status *v1alpha1.PlatformStatus, gen, served int64, why string) {
	var msg string
	switch {
	case served == gen:
		msg = fmt.Sprintf("generation %d, the object's, serves", gen)
	case served == 0:
		msg = fmt.Sprintf("generation %d is the object's and not stale, but nothing serves: generation %d %s", gen, gen, why)
	default:
		msg = fmt.Sprintf("generation %d is the object's and not stale, but generation %d serves: generation %d %s", gen, served, gen, why)
	}
	set(status, gen, v1alpha1.PlatformStale, metav1.ConditionFalse, ReasonCurrent, msg)
}

// notReady says why gen is not served, and what is served instead.
func notReady(gen, served int64, msg string) string {
	if served == 0 {
		return truncate(fmt.Sprintf("generation %d not served, nothing served: %s", gen, msg), maxMessage)
	}
	return truncate(fmt.Sprintf("generation %d not served, generation %d still serves: %s", gen, served, msg), maxMessage)
}

func set(status *v1alpha1.PlatformStatus, gen int64, typ string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&status.Conditions, metav1.Condition{
		Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen,
	})
}

// noEvents records nothing: a replica that does not write the Platform.
type noEvents struct{}

func (noEvents) Eventf(runtime.Object, runtime.Object, string, string, string, string, ...any) {}
