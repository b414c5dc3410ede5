package controller

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
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
	"leasekit.dev/examples/controller/internal/ring"
	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/publish"
)

// platformWait is how long a Release waits, when the Platform object's
// generation is one this process has not yet decided on, before it looks
// again. The Platform reconciler's notice of its decision usually comes
// first.
const platformWait = 5 * time.Second

// writeAttempts bounds the status writes of one reconcile that meet a
// conflict; past it the reconcile returns the conflict, retried with
// backoff.
const writeAttempts = 5

// ReleaseReconciler renders each Release's instance module against the
// platform Publisher serves and records the result in its status.
type ReleaseReconciler struct {
	Client client.Client
	// APIReader reads a Release past the cache, when a status write met a
	// conflict or the cache may be behind this process's own writes; nil
	// means Client.
	APIReader client.Reader
	Publisher *platform.Publisher
	Recorder  events.EventRecorder
	// Evaluator is the evaluator Publisher renders with
	// (Config.Evaluator): its Limits, and its time and memory budgets when
	// it is an *isolate.Workers, are inputs of a verdict. Nil means
	// kernel.New(), in this process, with no budgets.
	Evaluator platform.Evaluator
	// Platforms is the Platform reconciler of this process: while the
	// Platform object exists and Platforms has not yet decided on its
	// generation ([PlatformReconciler.Decided]), a Release waits rather
	// than render against the generation about to be replaced, or report
	// PlatformNotReady. Nil: the Release waits for as long as a Platform
	// object exists and none is served.
	Platforms *PlatformReconciler

	// Shard, when set, splits the Releases among the replicas of a ring:
	// a Release outside this replica's target and its claim is not
	// reconciled here; one in its target that it does not write for yet
	// is rendered into the memo and not written; its status is written
	// only while [ring.Hold.Writes] says so, checked right before the
	// write. A cached copy is then trusted only when this process stored
	// that very status.
	Shard Shard

	// Key signs the verdicts this process writes (status.mac) and
	// verifies those it reads: a status whose MAC verifies and whose
	// inputs and dependencies still hold is trusted, neither evaluated
	// nor written. Reconciles wait for its first load. Nil: no verdict
	// is signed, and no status is trusted.
	Key *StatusKey

	// Observe, when set, is called with the seconds each render took,
	// its wait for an evaluation's turn included, and its error.
	Observe func(secs float64, err error)

	mu sync.Mutex
	// state holds, per Release, the verdict this process last decided or
	// read from its status, and the status this process last stored.
	state map[types.NamespacedName]*releaseState
}

// releaseState is what the Release reconciler knows of one Release.
type releaseState struct {
	uid types.UID

	// The verdict: the status and condition a render decided (or a status
	// held, see verdict), status.InputsDigest naming the inputs it holds
	// for; status.MAC is left empty (writeStatus signs). over: the render
	// was killed past a budget, a verdict that holds whatever the
	// platform.
	decided bool
	over    bool
	err     error                  // the render's error, after its platform generation; nil when it rendered
	status  v1alpha1.ReleaseStatus // without conditions
	cond    metav1.Condition

	// written is the status this process last stored for uid; nil when it
	// stored none since it started.
	written *v1alpha1.ReleaseStatus
}

// Reconcile renders the Release unless a verdict holds for its current
// generation, inputs and dependencies (see verdict): one this process
// decided, or one its status holds under a MAC that verifies. It records
// the outcome in its status, signed; it blocks for the render, and, at
// first, for the status key's first load.
//
// The verdict is recorded in memory before the status write, so a write
// that fails is retried with backoff without rendering again. A render
// killed past a kernel budget (the spec's evaluation takes too long or too
// much memory) records RenderFailed naming the budget and returns a
// reconcile.TerminalError: that spec is not rendered again, whatever the
// platform, until the Release or the budgets change. A signed status that
// holds for the current inputs is kept as it is, by this process and by
// any other (a restart, a new leader, a handover): it is neither evaluated
// again nor written; so is one whose render's dependencies a new platform
// generation left as they were. A failure that says nothing of the spec (a worker that died
// without answering, the Publisher not booted, the context ending) writes
// nothing and returns an error, retried with backoff.
//
// While the Platform object's generation is one the Platform reconciler
// has not yet decided on (a new leader, a restart, a change not yet
// published), Reconcile renders and writes nothing, and looks again when
// the decision comes; a decided failure is a decision, and the Release
// renders against the generation that serves on. With no platform served,
// Reconcile writes PlatformNotReady when no Platform object exists (or it
// is being deleted), or when the Platform reconciler has decided on the
// one that exists and serves nothing.
//
// The status is written with the resourceVersion it was computed from; a
// conflict is recomputed from a fresh read and written again.
func (r *ReleaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	key := req.NamespacedName
	var rel v1alpha1.Release
	if err := r.Client.Get(ctx, key, &rel); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(key)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !rel.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	var hold *ring.Hold
	if r.Shard != nil {
		hold = r.Shard.Hold(rel.UID)
		defer hold.Done()
		if !hold.Renders() {
			return ctrl.Result{}, nil // another replica's
		}
	}
	if wait, err := r.platformPending(ctx); err != nil || wait {
		return r.waitForPlatform(key, err)
	}
	if err := r.keyLoaded(ctx); err != nil {
		return ctrl.Result{}, fmt.Errorf("render release %s: %w", key, err)
	}

	if r.forged(&rel) {
		// Someone but the controller wrote a verdict: it says nothing,
		// and this process's own is evaluated again too.
		r.forgetVerdicts(key)
	}
	inst := releaseInstance(&rel)
	rec, release, served := r.Publisher.Store().Lease()
	defer release()
	in := r.inputs(ctx, inst, rec, served)
	st := r.verdict(key, &rel, in)
	rendered := st == nil
	if rendered {
		start := time.Now()
		err := platform.ErrNotReady
		var out kernel.RenderOutput
		if served {
			var rk platform.RenderKey
			out, rk, err = r.Publisher.RenderLeased(ctx, rec, inst)
			switch {
			case rk.Dependencies != "" && rk.Dependencies != in.deps:
				// The result names the platform's directory: it holds
				// for that directory alone.
				in = in.with(rk.Dependencies)
			case rk.Dependencies == "" && in.against != "":
				in = in.with(wholePlatform(rec))
			}
		}
		if r.Observe != nil {
			r.Observe(time.Since(start).Seconds(), err)
		}
		switch o := classify(err); {
		case errors.Is(err, platform.ErrNotReady):
			// Forgotten since the look before the render, or never
			// published: look again.
			if wait, err := r.platformPending(ctx); err != nil || wait {
				return r.waitForPlatform(key, err)
			}
			st = platformNotReady(&rel)
		case o == transient || ctx.Err() != nil:
			return ctrl.Result{}, fmt.Errorf("render release %s (retrying): %w", key, errors.Join(err, ctx.Err()))
		default:
			st = r.decide(key, &rel, in, rec, out, err, o)
		}
	}

	if hold != nil && !hold.Writes() {
		return ctrl.Result{}, nil // rendered into the memo; written once this replica writes for it
	}
	release()
	wrote, err := r.writeStatus(ctx, key, &rel, st)
	if err != nil {
		return ctrl.Result{}, err
	}
	if st.over && (rendered || wrote) {
		// Terminal when decided or first stored; a later reconcile of the
		// same spec finds the verdict and neither renders nor writes.
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("render release %s: %w", key, st.err))
	}
	return ctrl.Result{}, nil
}

// verdict returns the verdict that holds for rel's current generation
// and inputs in, or nil: the one this process decided last, or else the
// one rel's status holds under a MAC that verifies with r.Key, which it
// then caches. Both are held to one rule ([holds]); memory is only what
// the status holds or is about to hold. A status without a MAC that
// verifies (written by anyone but the controller, copied from another
// Release or generation, or signed under a key since rotated) is not
// trusted: it is evaluated again, so a status never stands for a verdict
// the controller did not make.
func (r *ReleaseReconciler) verdict(key types.NamespacedName, rel *v1alpha1.Release, in verdictInputs) *releaseState {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.state[key]; st != nil && st.decided && st.uid == rel.UID {
		if _, ok := holds(rel.Generation, &st.status, &st.cond, in); ok {
			c := *st
			return &c
		}
	}
	c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered)
	if c == nil || !r.Key.Verify(rel.UID, &rel.Status, c) {
		return nil
	}
	over, ok := holds(rel.Generation, &rel.Status, c, in)
	if !ok {
		return nil
	}
	var err error
	if c.Status != metav1.ConditionTrue {
		err = errors.New(c.Message)
	}
	st := r.stateOf(key, rel.UID)
	*st = releaseState{uid: rel.UID, decided: true, over: over, err: err, cond: *c, written: st.written}
	rel.Status.DeepCopyInto(&st.status)
	st.status.Conditions, st.status.MAC = nil, ""
	v := *st
	return &v
}

// holds reports whether a verdict, status with its Rendered condition c,
// holds for generation gen of a Release's spec with the inputs in, and
// whether it is one over budget: it observed gen, and its
// status.InputsDigest is in's digest of its kind. It is the one rule for a
// verdict this process decided and for one a status holds.
func holds(gen int64, status *v1alpha1.ReleaseStatus, c *metav1.Condition, in verdictInputs) (over, ok bool) {
	if status.InputsDigest == "" || status.ObservedGeneration != gen || c.ObservedGeneration != gen {
		return false, false
	}
	switch status.InputsDigest {
	case in.over:
		return true, true
	case in.against:
		return false, true
	}
	return false, false
}

// verdictInputs are the digests of what a verdict on one Release's spec
// is a function of, one for each kind of verdict; a verdict holds while
// its status.InputsDigest is the one of its kind.
type verdictInputs struct {
	// against covers a render's output or refusal: the spec's files, the
	// evaluator's Limits, the controller's build, and deps. Empty when no
	// platform is served, or its record has no identity (set by hand): no
	// such verdict holds then.
	against string
	// deps is the digest of what a render of the spec reads of the
	// platform served (status.dependenciesDigest); empty with against.
	deps string
	// common is what every verdict on the spec is a function of.
	common string
	// over covers a render killed past a budget, which holds whatever the
	// platform: the spec's files, the evaluator's Limits, the
	// controller's build, and the evaluator's time and memory budgets.
	over string
}

// inputs returns the inputs of a verdict on inst, against rec when
// served, which the caller holds leased. It evaluates nothing.
func (r *ReleaseReconciler) inputs(ctx context.Context, inst kernel.Instance, rec platform.Generated, served bool) verdictInputs {
	spec := kernel.Digest(inst.Files)
	var limits kernel.Limits
	budgets := "none"
	if r.Evaluator != nil {
		limits = r.Evaluator.Bounds()
	}
	if ws, ok := r.Evaluator.(*isolate.Workers); ok {
		t, m := ws.Timeout, ws.Memory
		if t == 0 {
			t = isolate.DefaultTimeout
		}
		if m == 0 {
			m = isolate.DefaultMemory
		}
		budgets = fmt.Sprintf("time=%d memory=%d", t, m)
	}
	in := verdictInputs{common: fmt.Sprintf("leasekit.dev/examples/controller release verdict v2\nspec %s\nlimits %+v\nbuild %s\n", spec, limits, build())}
	in.over = digestOf(in.common + "over budget " + budgets + "\n")
	if served && rec.Identity != (publish.Identity[int64]{}) {
		in = in.with(dependencies(ctx, r.Publisher, rec, inst))
	}
	return in
}

// with returns in against a platform of which a render reads what deps
// digests.
func (in verdictInputs) with(deps string) verdictInputs {
	in.deps = deps
	in.against = digestOf(in.common + "dependencies " + deps + "\n")
	return in
}

// dependencies returns the digest of what a render of inst against rec
// reads of the platform, [platform.Publisher.Key]'s Dependencies; it
// evaluates nothing. An instance whose key cannot be computed (its files
// do not read) depends, as far as this controller knows, on the whole
// platform: its identity, directory and skew policy.
func dependencies(ctx context.Context, pub *platform.Publisher, rec platform.Generated, inst kernel.Instance) string {
	if key, err := pub.Key(ctx, rec, inst); err == nil && key.Dependencies != "" {
		return key.Dependencies
	}
	return wholePlatform(rec)
}

// wholePlatform is the dependencies of a render that may read anything of
// rec: they change with every content and directory.
func wholePlatform(rec platform.Generated) string {
	return digestOf(fmt.Sprintf("leasekit.dev/examples/controller whole platform\n%s dir %q skew %s\n", rec.Identity, rec.Dir, rec.Skew))
}

// releaseInstance returns rel's instance module.
func releaseInstance(rel *v1alpha1.Release) kernel.Instance {
	files := make(map[string][]byte, len(rel.Spec.Files))
	for name, content := range rel.Spec.Files {
		files[name] = []byte(content)
	}
	return kernel.Instance{Files: files}
}

// digestOf returns "sha256:" and the hex SHA-256 of s.
func digestOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// build names the controller's build, an input of every verdict: the
// main module's version, every module it was built with (path, version
// and checksum) and the VCS revision, as the binary's build information
// records them. A build from changed sources that records none of that
// (a module replaced by a directory is "(devel)"; a build outside a VCS
// checkout has no revision) counts as the same build.
var build = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s@%s", bi.Main.Path, bi.Main.Version)
	for _, m := range bi.Deps {
		if m.Replace != nil {
			m = m.Replace
		}
		fmt.Fprintf(&b, " %s@%s/%s", m.Path, m.Version, m.Sum)
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
			fmt.Fprintf(&b, " %s=%s", s.Key, s.Value)
		}
	}
	return b.String()
})

// decide records the verdict of a render of rel with the inputs in (its
// output out, or err, classified as o) against rec, and returns it.
func (r *ReleaseReconciler) decide(key types.NamespacedName, rel *v1alpha1.Release, in verdictInputs, rec platform.Generated, out kernel.RenderOutput, err error, o outcome) *releaseState {
	v := releaseState{uid: rel.UID, decided: true, over: o == overBudget}
	v.status.InputsDigest, v.status.DependenciesDigest = in.against, in.deps
	if v.over {
		v.status.InputsDigest, v.status.DependenciesDigest = in.over, ""
	}
	v.status.ObservedGeneration = rel.Generation
	v.status.PlatformGeneration = rec.Generation
	v.cond = metav1.Condition{Type: v1alpha1.ReleaseRendered, ObservedGeneration: rel.Generation}
	if err == nil {
		fitStatus(&v.status, &v.cond, out, rec.Generation)
	} else {
		v.err = fmt.Errorf("platform generation %d: %w", rec.Generation, err)
		v.cond.Status, v.cond.Reason = metav1.ConditionFalse, v1alpha1.ReasonRenderFailed
		v.cond.Message = truncate(fmt.Sprintf("platform generation %d: %s", rec.Generation, describe(err)), maxMessage)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.stateOf(key, rel.UID)
	written := st.written
	*st = v
	st.written = written
	c := *st
	return &c
}

// platformNotReady returns the PlatformNotReady state of rel; it records no
// verdict: no render was decided.
func platformNotReady(rel *v1alpha1.Release) *releaseState {
	st := &releaseState{uid: rel.UID}
	st.status.ObservedGeneration = rel.Generation
	st.cond = metav1.Condition{
		Type: v1alpha1.ReleaseRendered, ObservedGeneration: rel.Generation,
		Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPlatformNotReady,
		Message: "no platform is served: no Platform exists, the one that exists does not build, or its publish failed and is retried; the release renders once one is served",
	}
	return st
}

// platformPending reports whether a Platform object exists, not being
// deleted, whose generation this process has not yet decided on (with
// Platforms nil: while none is served): the Release waits for the
// decision rather than render against what it replaces.
func (r *ReleaseReconciler) platformPending(ctx context.Context) (bool, error) {
	var p v1alpha1.Platform
	if err := r.Client.Get(ctx, types.NamespacedName{Name: v1alpha1.PlatformName}, &p); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, err
	}
	if !p.DeletionTimestamp.IsZero() {
		return false, nil
	}
	if r.Platforms == nil {
		return r.Publisher.Store().Generation() == 0, nil
	}
	return !r.Platforms.Decided(p.UID, p.Generation), nil
}

// waitForPlatform is the result of a reconcile that waits for the
// Platform reconciler's decision, or failed to read the Platform (err).
// The decision's notice re-queues every Release; the requeue is the
// fallback.
func (r *ReleaseReconciler) waitForPlatform(key types.NamespacedName, err error) (ctrl.Result, error) {
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("render release %s: look up the platform: %w", key, err)
	}
	return ctrl.Result{RequeueAfter: platformWait}, nil
}

// fitStatus sets status and cond for a render's output against platform
// generation gen, within the status's bounds (see v1alpha1's
// MaxStatusResourcesBytes and the others).
func fitStatus(status *v1alpha1.ReleaseStatus, cond *metav1.Condition, out kernel.RenderOutput, gen int64) {
	status.Instance = truncate(out.Instance, v1alpha1.MaxStatusInstanceBytes)
	resources := make([]v1alpha1.RenderedResource, 0, len(out.Resources))
	for _, res := range out.Resources {
		resources = append(resources, v1alpha1.RenderedResource{Component: res.Component, Kind: res.Kind, Name: res.Name})
	}
	list, err := json.Marshal(resources)
	if err != nil {
		panic(err) // strings only: it cannot fail
	}
	sum := sha256.Sum256(list)
	status.ResourceCount = int32(len(resources))
	status.ResourcesDigest = "sha256:" + hex.EncodeToString(sum[:])
	cond.Status = metav1.ConditionTrue
	if len(list) <= v1alpha1.MaxStatusResourcesBytes {
		status.Resources = resources
		cond.Reason = v1alpha1.ReasonRendered
		cond.Message = fmt.Sprintf("rendered %d resource(s) against platform generation %d", len(resources), gen)
	} else {
		cond.Reason = v1alpha1.ReasonResourcesOmitted
		cond.Message = fmt.Sprintf("rendered %d resource(s) against platform generation %d; their list, %d bytes as JSON, is longer than the status holds (%d bytes): status.resourceCount and status.resourcesDigest describe it",
			len(resources), gen, len(list), v1alpha1.MaxStatusResourcesBytes)
	}
	status.Diagnostics = nil
	for i, d := range out.Diagnostics {
		if i == v1alpha1.MaxStatusDiagnostics-1 && len(out.Diagnostics) > v1alpha1.MaxStatusDiagnostics {
			status.Diagnostics = append(status.Diagnostics, fmt.Sprintf("… and %d more diagnostic(s)", len(out.Diagnostics)-i))
			break
		}
		status.Diagnostics = append(status.Diagnostics, truncate(fmt.Sprintf("%s: %s", d.Severity, d.Message), v1alpha1.MaxStatusDiagnosticBytes))
	}
}

// writeStatus stores st's status and condition in rel's status, unless the
// stored status holds them already, and records an event when the
// condition changed. It writes with the resourceVersion of the copy it
// computed from: a conflict reads the Release again past the cache and
// computes again. It reports whether it wrote. A Release gone, or whose spec changed meanwhile, is left
// to its own reconcile. A failure leaves the verdict recorded.
func (r *ReleaseReconciler) writeStatus(ctx context.Context, key types.NamespacedName, rel *v1alpha1.Release, st *releaseState) (wrote bool, _ error) {
	cur := rel
	fresh := false
	for attempt := 1; ; attempt++ {
		status := st.status.DeepCopy()
		if status.InputsDigest != "" {
			status.MAC = r.Key.Sign(cur.UID, status, &st.cond)
		}
		status.Conditions = slices.Clone(cur.Status.Conditions)
		meta.SetStatusCondition(&status.Conditions, st.cond)
		if equality.Semantic.DeepEqual(&cur.Status, status) {
			if fresh || r.trusted(key, cur.UID, status) {
				if fresh && r.Shard != nil {
					r.setWritten(key, cur.UID, status) // as stored: trust a cached copy of it
				}
				return false, nil
			}
			// This process last stored another status: the cache may be
			// behind that write. Compare with the stored object.
		} else {
			upd := cur.DeepCopy()
			upd.Status = *status
			err := r.Client.Status().Update(ctx, upd)
			switch {
			case err == nil:
				r.setWritten(key, cur.UID, status)
				if prev := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ReleaseRendered); prev == nil ||
					prev.Status != st.cond.Status || prev.Reason != st.cond.Reason || prev.Message != st.cond.Message || prev.ObservedGeneration != st.cond.ObservedGeneration {
					kind := "Normal"
					if st.cond.Status != metav1.ConditionTrue {
						kind = "Warning"
					}
					r.Recorder.Eventf(upd, nil, kind, st.cond.Reason, "Render", "%s", st.cond.Message)
				}
				return true, nil
			case apierrors.IsNotFound(err):
				return false, nil
			case !apierrors.IsConflict(err) || attempt >= writeAttempts:
				return false, fmt.Errorf("update status of release %s: %w", key, err)
			}
		}
		var next v1alpha1.Release
		if err := r.reader().Get(ctx, key, &next); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if next.UID != rel.UID || next.Generation != rel.Generation || !next.DeletionTimestamp.IsZero() {
			return false, nil // another object or another spec: its own event reconciles it
		}
		cur, fresh = &next, true
	}
}

// trusted reports whether a cached copy holding status can be taken as
// stored: this process stored status last, or stored nothing since it
// started (its cache was listed after any write of an earlier leader
// began).
func (r *ReleaseReconciler) trusted(key types.NamespacedName, uid types.UID, status *v1alpha1.ReleaseStatus) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.state[key]
	if r.Shard != nil {
		// Another replica may have written since this one's cache listed.
		return st != nil && st.uid == uid && st.written != nil && equality.Semantic.DeepEqual(st.written, status)
	}
	return st == nil || st.uid != uid || st.written == nil || equality.Semantic.DeepEqual(st.written, status)
}

// forged reports whether rel's status claims a verdict (its Rendered
// condition is other than PlatformNotReady) whose MAC does not verify
// under the key held; false when no key is held.
func (r *ReleaseReconciler) forged(rel *v1alpha1.Release) bool {
	c := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered)
	if c == nil || c.Reason == v1alpha1.ReasonPlatformNotReady || r.Key.held() == nil {
		return false
	}
	return !r.Key.Verify(rel.UID, &rel.Status, c)
}

// holdsVerdict reports whether status is, signed under r.Key, the
// verdict r holds for the Release key with uid: its MAC verifies, and it
// is the MAC of that verdict. False when r holds none, or no key.
func (r *ReleaseReconciler) holdsVerdict(key types.NamespacedName, uid types.UID, status *v1alpha1.ReleaseStatus) bool {
	c := meta.FindStatusCondition(status.Conditions, v1alpha1.ReleaseRendered)
	if c == nil || !r.Key.Verify(uid, status, c) {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.state[key]
	if st == nil || !st.decided || st.uid != uid {
		return false
	}
	return hmac.Equal([]byte(status.MAC), []byte(r.Key.Sign(uid, &st.status, &st.cond)))
}

// Verdicts returns the number of Releases whose verdict this process
// holds, decided here or taken from a signed status.
func (r *ReleaseReconciler) Verdicts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, st := range r.state {
		if st.decided {
			n++
		}
	}
	return n
}

// keyLoaded waits until r.Key's first load ended, so that no status is
// distrusted for want of a key still being read; it returns an error when
// ctx ends first.
func (r *ReleaseReconciler) keyLoaded(ctx context.Context) error {
	if r.Key == nil {
		return nil
	}
	select {
	case <-r.Key.Loaded():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the status key: %w", ctx.Err())
	}
}

// forgetVerdicts forgets the verdicts this process holds, decided or
// taken from a status, of the Releases keys, or of every Release when
// none is given (for a key changed): each is rendered again when next
// reconciled (the Publisher's memo may answer) and its status signed
// under the key held. What it stored stays known.
func (r *ReleaseReconciler) forgetVerdicts(keys ...types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, st := range r.state {
		if len(keys) == 0 || slices.Contains(keys, k) {
			*st = releaseState{uid: st.uid, written: st.written}
		}
	}
}

// forgetWritten forgets what this process stored for the Releases whose
// UIDs hash into part, which another replica writes for from now on.
func (r *ReleaseReconciler) forgetWritten(part ring.Set) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, st := range r.state {
		if part.Contains(ring.Hash(string(st.uid))) {
			st.written = nil
		}
	}
}

func (r *ReleaseReconciler) setWritten(key types.NamespacedName, uid types.UID, status *v1alpha1.ReleaseStatus) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stateOf(key, uid).written = status
}

// stateOf returns the state of the Release key with uid, a new one when
// it has none or one of another object. r.mu is held.
func (r *ReleaseReconciler) stateOf(key types.NamespacedName, uid types.UID) *releaseState {
	st := r.state[key]
	if st == nil || st.uid != uid {
		if r.state == nil {
			r.state = make(map[types.NamespacedName]*releaseState)
		}
		st = &releaseState{uid: uid}
		r.state[key] = st
	}
	return st
}

// forget drops what r knows of the Release key, deleted.
func (r *ReleaseReconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.state, key)
}

func (r *ReleaseReconciler) reader() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
