package controller_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
)

var keySecret = types.NamespacedName{Namespace: "default", Name: controller.DefaultStatusKeyName}

// aVerdict is a signed verdict's status and condition.
func aVerdict() (*v1alpha1.ReleaseStatus, *metav1.Condition) {
	st := &v1alpha1.ReleaseStatus{
		ObservedGeneration: 3, PlatformGeneration: 7, Instance: "shop",
		Resources:     []v1alpha1.RenderedResource{{Component: "web", Kind: "Deployment", Name: "shop-web"}},
		ResourceCount: 1, ResourcesDigest: "sha256:aa", Diagnostics: []string{"warning: skew"},
		InputsDigest: "sha256:bb", DependenciesDigest: "sha256:cc",
	}
	c := &metav1.Condition{Type: v1alpha1.ReleaseRendered, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRendered, Message: "rendered 1 resource(s)", ObservedGeneration: 3}
	return st, c
}

// TestStatusKeyMACCoversTheVerdict: a verdict's MAC verifies for its
// Release, and fails once any field of the verdict, the Release's UID or
// the key changes.
func TestStatusKeyMACCoversTheVerdict(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(newScheme()).Build()
	k := statusKey(t, c)
	st, cond := aVerdict()
	st.MAC = k.Sign("uid-1", st, cond)
	if !strings.HasPrefix(st.MAC, "hmac-sha256:") || !k.Verify("uid-1", st, cond) {
		t.Fatalf("MAC %q does not verify", st.MAC)
	}
	if k.Verify("uid-2", st, cond) {
		t.Error("the verdict of uid-1 verifies for uid-2: a status copied from another Release is trusted")
	}
	mutations := map[string]func(*v1alpha1.ReleaseStatus, *metav1.Condition){
		"observedGeneration": func(s *v1alpha1.ReleaseStatus, _ *metav1.Condition) { s.ObservedGeneration++ },
		"platformGeneration": func(s *v1alpha1.ReleaseStatus, _ *metav1.Condition) { s.PlatformGeneration++ },
		"instance":           func(s *v1alpha1.ReleaseStatus, _ *metav1.Condition) { s.Instance = "other" },
		"resources":          func(s *v1alpha1.ReleaseStatus, _ *metav1.Condition) { s.Resources[0].Name = "x" },
		"resourceCount":      func(s *v1alpha1.ReleaseStatus, _ *metav1.Condition) { s.ResourceCount++ },
		"resourcesDigest":    func(s *v1alpha1.ReleaseStatus, _ *metav1.Condition) { s.ResourcesDigest = "sha256:ab" },
		"diagnostics":        func(s *v1alpha1.ReleaseStatus, _ *metav1.Condition) { s.Diagnostics = nil },
		"inputsDigest":       func(s *v1alpha1.ReleaseStatus, _ *metav1.Condition) { s.InputsDigest = "sha256:bc" },
		"dependenciesDigest": func(s *v1alpha1.ReleaseStatus, _ *metav1.Condition) { s.DependenciesDigest = "sha256:cd" },
		"condition status":   func(_ *v1alpha1.ReleaseStatus, c *metav1.Condition) { c.Status = metav1.ConditionFalse },
		"condition reason": func(_ *v1alpha1.ReleaseStatus, c *metav1.Condition) {
			c.Reason = v1alpha1.ReasonRenderFailed
		},
		"condition message":            func(_ *v1alpha1.ReleaseStatus, c *metav1.Condition) { c.Message = "forged" },
		"condition observedGeneration": func(_ *v1alpha1.ReleaseStatus, c *metav1.Condition) { c.ObservedGeneration++ },
	}
	for what, mutate := range mutations {
		s2, c2 := aVerdict()
		s2.MAC = st.MAC
		mutate(s2, c2)
		if k.Verify("uid-1", s2, c2) {
			t.Errorf("a verdict with its %s changed verifies", what)
		}
	}
	// An empty list, as a render of no resources makes it, signs as the
	// none the API server stores.
	empty, c0 := aVerdict()
	empty.Resources, empty.Diagnostics = []v1alpha1.RenderedResource{}, []string{}
	stored := empty.DeepCopy()
	stored.Resources, stored.Diagnostics = nil, nil
	stored.MAC = k.Sign("uid-1", empty, c0)
	if !k.Verify("uid-1", stored, c0) {
		t.Error("a verdict of empty lists does not verify as stored")
	}
	// A second replica on the same cluster holds the same key.
	if !statusKey(t, c).Verify("uid-1", st, cond) {
		t.Error("another replica's key does not verify the verdict")
	}
}

// TestStatusKeyRotates: a Secret deleted is made again with a new key,
// OnChange is told, and verdicts signed under the old key fail.
func TestStatusKeyRotates(t *testing.T) {
	ctx := context.Background()
	c := fake.NewClientBuilder().WithScheme(newScheme()).Build()
	var changes atomic.Int32
	k := &controller.StatusKey{Reader: c, Writer: c, Secret: keySecret, OnChange: func() { changes.Add(1) }}
	if err := k.Load(ctx); err != nil {
		t.Fatal(err)
	}
	st, cond := aVerdict()
	st.MAC = k.Sign("uid-1", st, cond)
	if err := k.Load(ctx); err != nil || changes.Load() != 1 {
		t.Fatalf("a second load of the same Secret: %v, %d change(s); want one, the first", err, changes.Load())
	}
	if err := c.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: keySecret.Namespace, Name: keySecret.Name}}); err != nil {
		t.Fatal(err)
	}
	if err := k.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if changes.Load() != 2 || k.Verify("uid-1", st, cond) {
		t.Fatalf("after the Secret's deletion: %d change(s), the old verdict verifies %v; want 2 and false", changes.Load(), k.Verify("uid-1", st, cond))
	}
	var s corev1.Secret
	if err := c.Get(ctx, keySecret, &s); err != nil || len(s.Data["key"]) != 32 {
		t.Fatalf("the Secret made again: %v, %d key bytes", err, len(s.Data["key"]))
	}
}

// TestStatusKeyRacingCreateReadsTheWinner: a replica whose create meets
// AlreadyExists takes the key the other replica created.
func TestStatusKeyRacingCreateReadsTheWinner(t *testing.T) {
	ctx := context.Background()
	base := fake.NewClientBuilder().WithScheme(newScheme()).Build()
	winner := statusKey(t, base)
	var gets atomic.Int32
	// The loser looked before the winner created: its first read finds
	// nothing, its create conflicts.
	loserClient := interceptor.NewClient(base, interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*corev1.Secret); ok && gets.Add(1) == 1 {
				return apierrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, key.Name)
			}
			return c.Get(ctx, key, obj, opts...)
		},
	})
	loser := &controller.StatusKey{Reader: loserClient, Writer: loserClient, Secret: keySecret}
	if err := loser.Load(ctx); err != nil {
		t.Fatalf("the loser's load: %v", err)
	}
	st, cond := aVerdict()
	st.MAC = winner.Sign("uid-1", st, cond)
	if !loser.Verify("uid-1", st, cond) {
		t.Error("the replicas that raced to create the Secret hold different keys")
	}
}

// TestStatusKeyRefusesAWrongShape: a Secret of another shape is left as
// it is, with an event and no key held: nothing is signed or trusted.
func TestStatusKeyRefusesAWrongShape(t *testing.T) {
	ctx := context.Background()
	shapes := map[string]*corev1.Secret{
		"another field":  {Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"password": []byte(strings.Repeat("x", 32))}},
		"an extra field": {Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"key": []byte(strings.Repeat("x", 32)), "note": []byte("hi")}},
		"a short key":    {Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"key": []byte("short")}},
		"another type":   {Type: corev1.SecretTypeTLS, Data: map[string][]byte{"key": []byte(strings.Repeat("x", 32)), "tls.crt": nil, "tls.key": nil}},
	}
	for what, s := range shapes {
		t.Run(what, func(t *testing.T) {
			s.ObjectMeta = metav1.ObjectMeta{Namespace: keySecret.Namespace, Name: keySecret.Name}
			c := fake.NewClientBuilder().WithScheme(newScheme()).WithObjects(s.DeepCopy()).Build()
			rec := events.NewFakeRecorder(10)
			k := &controller.StatusKey{Reader: c, Writer: c, Secret: keySecret, Recorder: rec}
			if err := k.Load(ctx); err != nil {
				t.Fatal(err)
			}
			st, cond := aVerdict()
			if mac := k.Sign("uid-1", st, cond); mac != "" {
				t.Errorf("signed %q under a refused Secret", mac)
			}
			var got corev1.Secret
			if err := c.Get(ctx, keySecret, &got); err != nil {
				t.Fatal(err)
			}
			if got.Type != s.Type || len(got.Data) != len(s.Data) {
				t.Errorf("the Secret was changed: %+v", got)
			}
			select {
			case e := <-rec.Events:
				if !strings.Contains(e, "StatusKeyRefused") {
					t.Errorf("event %q", e)
				}
			default:
				t.Error("no event for the refused Secret")
			}
			if err := k.Load(ctx); err != nil || len(rec.Events) != 0 {
				t.Errorf("a second load of the same Secret: %v, %d more event(s); want none", err, len(rec.Events))
			}
		})
	}
}

// TestStatusKeyDeletedAndNotMadeAgainHoldsNone: the Secret deleted (a
// rotation: the old key is revoked) and its create failing, the StatusKey
// holds no key: a verdict signed under the revoked key is not trusted,
// and none is signed under it, until the create succeeds.
func TestStatusKeyDeletedAndNotMadeAgainHoldsNone(t *testing.T) {
	ctx := context.Background()
	base := fake.NewClientBuilder().WithScheme(newScheme()).Build()
	var refuseCreate atomic.Bool
	c := interceptor.NewClient(base, interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if refuseCreate.Load() {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, obj.GetName(), nil)
			}
			return c.Create(ctx, obj, opts...)
		},
	})
	k := &controller.StatusKey{Reader: c, Writer: c, Secret: keySecret}
	if err := k.Load(ctx); err != nil {
		t.Fatal(err)
	}
	st, cond := aVerdict()
	st.MAC = k.Sign("uid-1", st, cond)
	if err := base.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: keySecret.Namespace, Name: keySecret.Name}}); err != nil {
		t.Fatal(err)
	}
	refuseCreate.Store(true)
	if err := k.Load(ctx); !apierrors.IsForbidden(err) {
		t.Fatalf("Load with the Secret deleted and its create refused = %v, want the Forbidden", err)
	}
	if k.Verify("uid-1", st, cond) {
		t.Error("a verdict signed under the deleted Secret's key verifies: the rotation revoked nothing")
	}
	if mac := k.Sign("uid-1", st, cond); mac != "" {
		t.Errorf("signed %q under the deleted Secret's key", mac)
	}
	refuseCreate.Store(false)
	if err := k.Load(ctx); err != nil || k.Sign("uid-1", st, cond) == "" || k.Verify("uid-1", st, cond) {
		t.Fatalf("the create succeeding: %v; want a new key held, the old verdict not trusted", err)
	}
}
