package controller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/kernel/isolate"
)

// ReleaseReconciler renders each Release's instance module against the
// platform Publisher serves and records the result in its status.
type ReleaseReconciler struct {
	Client    client.Client
	Publisher *platform.Publisher
	Recorder  events.EventRecorder

	// Observe, when set, is called with the seconds each render took and
	// its error.
	Observe func(secs float64, err error)

	mu sync.Mutex
	// against holds, per Release, the platform this process last rendered
	// it against (nil: none served). A generation number alone does not
	// name a platform: a Platform deleted and created again publishes its
	// generation 1 again, with other content.
	against map[types.NamespacedName]*kernel.Platform
	// overBudget holds, per Release, the generation of its spec whose
	// render was killed past a budget: that spec is not rendered again,
	// not even against another platform, until it changes.
	overBudget map[types.NamespacedName]int64
}

// Reconcile renders the Release unless its status already records a render
// of its current generation against the generation the Publisher serves.
// With no platform served it records PlatformNotReady and waits for the
// Publisher to serve one; a render that fails is not retried until the
// Release or the platform changes. A render killed past a kernel budget
// (a [isolate.BudgetError]: the spec's evaluation takes too long or too
// much memory) records RenderFailed naming the budget and returns a
// reconcile.TerminalError: that spec is not rendered again, whatever the
// platform, until the Release changes. A transient failure returns an
// error, so the request is retried with backoff.
func (r *ReleaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var rel v1alpha1.Release
	if err := r.Client.Get(ctx, req.NamespacedName, &rel); err != nil {
		if apierrors.IsNotFound(err) {
			r.setAgainst(req.NamespacedName, nil, false)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !rel.DeletionTimestamp.IsZero() || r.upToDate(req.NamespacedName, &rel) {
		return ctrl.Result{}, nil
	}

	files := make(map[string][]byte, len(rel.Spec.Files))
	for name, content := range rel.Spec.Files {
		files[name] = []byte(content)
	}
	start := time.Now()
	out, rec, err := r.Publisher.Render(ctx, kernel.Instance{Files: files})
	if r.Observe != nil {
		r.Observe(time.Since(start).Seconds(), err)
	}
	if errors.Is(err, platform.ErrNotBooted) || ctx.Err() != nil {
		return ctrl.Result{}, fmt.Errorf("render release %s: %w", req.NamespacedName, errors.Join(err, ctx.Err()))
	}

	status := rel.Status.DeepCopy()
	status.ObservedGeneration = rel.Generation
	cond := metav1.Condition{Type: v1alpha1.ReleaseRendered, ObservedGeneration: rel.Generation}
	switch {
	case err == nil:
		status.PlatformGeneration = rec.Generation
		status.Instance = out.Instance
		status.Resources = make([]v1alpha1.RenderedResource, 0, len(out.Resources))
		for _, res := range out.Resources {
			status.Resources = append(status.Resources, v1alpha1.RenderedResource{Component: res.Component, Kind: res.Kind, Name: res.Name})
		}
		status.Diagnostics = nil
		for _, d := range out.Diagnostics {
			status.Diagnostics = append(status.Diagnostics, fmt.Sprintf("%s: %s", d.Severity, d.Message))
		}
		cond.Status, cond.Reason = metav1.ConditionTrue, v1alpha1.ReasonRendered
		cond.Message = fmt.Sprintf("rendered %d resource(s) against platform generation %d", len(out.Resources), rec.Generation)
	case errors.Is(err, platform.ErrNotReady):
		status.PlatformGeneration = 0
		status.Instance, status.Resources, status.Diagnostics = "", nil, nil
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonPlatformNotReady
		cond.Message = "no platform is served yet; the release renders once one is"
	default:
		status.PlatformGeneration = rec.Generation
		status.Instance, status.Resources, status.Diagnostics = "", nil, nil
		cond.Status, cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonRenderFailed
		cond.Message = truncate(fmt.Sprintf("platform generation %d: %s", rec.Generation, describe(err)), maxMessage)
	}
	changed := !rendered(&rel.Status, cond)
	meta.SetStatusCondition(&status.Conditions, cond)
	if err := r.updateStatus(ctx, &rel, status); err != nil {
		return ctrl.Result{}, err
	}
	r.setAgainst(req.NamespacedName, rec.Platform, true)
	over := errors.Is(err, isolate.ErrBudget)
	r.setOverBudget(req.NamespacedName, rel.Generation, over)
	if changed {
		kind := "Normal"
		if cond.Status != metav1.ConditionTrue {
			kind = "Warning"
		}
		r.Recorder.Eventf(&rel, nil, kind, cond.Reason, "Render", "%s", cond.Message)
	}
	if over {
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("render release %s: %w", req.NamespacedName, err))
	}
	return ctrl.Result{}, nil
}

// setOverBudget records whether the render of generation gen of the
// Release key was killed past a budget.
func (r *ReleaseReconciler) setOverBudget(key types.NamespacedName, gen int64, over bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !over {
		delete(r.overBudget, key)
		return
	}
	if r.overBudget == nil {
		r.overBudget = make(map[types.NamespacedName]int64)
	}
	r.overBudget[key] = gen
}

// upToDate reports whether rel's status records a render of its current
// generation against the platform the Publisher serves now: the same
// generation, and the same built platform, which this process rendered it
// against last. After a restart every Release renders once again.
func (r *ReleaseReconciler) upToDate(key types.NamespacedName, rel *v1alpha1.Release) bool {
	c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered)
	if c == nil || c.ObservedGeneration != rel.Generation || rel.Status.ObservedGeneration != rel.Generation {
		return false
	}
	r.mu.Lock()
	gen, over := r.overBudget[key]
	r.mu.Unlock()
	if over && gen == rel.Generation && c.Reason == v1alpha1.ReasonRenderFailed {
		return true // the same spec, killed past a budget: rendering it again would be killed again
	}
	served, ok := r.Publisher.Store().Generated()
	if rel.Status.PlatformGeneration != served.Generation {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	last, seen := r.against[key]
	return seen && (ok && last == served.Platform || !ok && last == nil)
}

// setAgainst records that the Release key was last rendered against p (nil:
// no platform served), or, with rendered false, forgets the Release.
func (r *ReleaseReconciler) setAgainst(key types.NamespacedName, p *kernel.Platform, rendered bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !rendered {
		delete(r.against, key)
		delete(r.overBudget, key)
		return
	}
	if r.against == nil {
		r.against = make(map[types.NamespacedName]*kernel.Platform)
	}
	r.against[key] = p
}

// rendered reports whether status already holds cond, apart from its time.
func rendered(status *v1alpha1.ReleaseStatus, cond metav1.Condition) bool {
	c := meta.FindStatusCondition(status.Conditions, cond.Type)
	return c != nil && c.Status == cond.Status && c.Reason == cond.Reason &&
		c.Message == cond.Message && c.ObservedGeneration == cond.ObservedGeneration
}

// updateStatus writes status when it differs from the object's.
func (r *ReleaseReconciler) updateStatus(ctx context.Context, rel *v1alpha1.Release, status *v1alpha1.ReleaseStatus) error {
	if equality.Semantic.DeepEqual(&rel.Status, status) {
		return nil
	}
	base := rel.DeepCopy()
	rel.Status = *status
	if err := r.Client.Status().Patch(ctx, rel, client.MergeFrom(base)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("update status of release %s/%s: %w", rel.Namespace, rel.Name, err)
	}
	return nil
}
