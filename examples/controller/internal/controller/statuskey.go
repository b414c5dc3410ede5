package controller

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"leasekit.dev/examples/controller/api/v1alpha1"
)

// DefaultStatusKeyName names the Secret holding the status key when
// Config.StatusKey names none.
const DefaultStatusKeyName = "leasekit-status-key"

// statusKeyField is the Secret's one data field, the key.
const statusKeyField = "key"

// statusKeyBytes is the length of a key the controller makes; a Secret
// holding a shorter one is refused.
const statusKeyBytes = 32

// macPrefix heads a status.mac.
const macPrefix = "hmac-sha256:"

// DefaultStatusKeyRefresh is how often a StatusKey reads its Secret again.
const DefaultStatusKeyRefresh = 30 * time.Second

// A StatusKey holds the key the controller signs its Release verdicts
// with (status.mac) and verifies them by: the data field "key" of a Secret
// in the controller's namespace, at least 32 bytes, which the StatusKey
// creates with 32 random bytes when it finds none. Replicas racing to
// create it agree: the one whose create fails with AlreadyExists reads the
// winner's. It reads the Secret again every Refresh; a Secret deleted is
// made again with a new key (a rotation; while it cannot be made, no key
// is held), and a key changed is taken: the Releases' MACs then fail and
// each is evaluated again once.
//
// A Secret of another shape (another type, another field, a key shorter
// than 32 bytes) is refused, never written over: the StatusKey logs why
// and records a Warning event on the Secret, once per content, and holds
// no key until it is mended or deleted. Without a key no status is
// trusted (every Release is evaluated as it is met, as if the controller
// had no memory beyond its process) and verdicts are written without a
// MAC.
//
// What the key protects: that a verdict in a Release's status is one the
// controller made for that Release's UID and spec generation, with those
// inputs and dependencies. What it does not: the verdict is not secret
// (anyone who may read the Release reads it), and whoever may write
// releases/status can still delete or replace the status; that costs an
// evaluation, never a verdict trusted that the controller did not make.
// The key is as safe as the Secret: whoever may read Secrets in the
// controller's namespace can forge verdicts, and so can whoever may write
// that Secret (update it, or delete it and create it again with a key of
// their own): the StatusKey takes whatever key of the right shape it holds.
//
// The zero StatusKey holds no key; it is safe for concurrent use once
// started. Start it as a manager runnable on every replica.
type StatusKey struct {
	// Reader reads the Secret past the manager's cache (a cache would
	// need list and watch on Secrets); Writer creates it.
	Reader client.Reader
	Writer client.Writer
	// Secret names the Secret.
	Secret types.NamespacedName
	// Recorder records the refusal of a Secret of the wrong shape; nil
	// records none.
	Recorder events.EventRecorder
	Log      logr.Logger
	// Refresh is how often the Secret is read again; zero means
	// DefaultStatusKeyRefresh.
	Refresh time.Duration
	// OnChange, when set, is called, under no lock, after the key changed
	// (a first key included) or was dropped.
	OnChange func()

	mu      sync.RWMutex
	key     []byte
	refused string        // the resourceVersion of the Secret last refused
	loaded  chan struct{} // closed once a Load first succeeded
	closed  bool
}

// loadedCh returns k.loaded, made on first use; done closes it.
func (k *StatusKey) loadedCh(done bool) chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.loaded == nil {
		k.loaded = make(chan struct{})
	}
	if done && !k.closed {
		k.closed = true
		close(k.loaded)
	}
	return k.loaded
}

// Start reads or creates the Secret, then reads it again every Refresh
// until ctx ends. A failure is logged and retried: at the next refresh
// once a Load succeeded (the key held stays), and sooner before that,
// from half a second doubling up to Refresh, since Releases wait for the
// first. It returns nil when ctx ends.
func (k *StatusKey) Start(ctx context.Context) error {
	every := k.Refresh
	if every <= 0 {
		every = DefaultStatusKeyRefresh
	}
	retry := 500 * time.Millisecond
	for {
		wait := every
		if err := k.Load(ctx); err != nil && ctx.Err() == nil {
			k.Log.Error(err, "status key: read or create the Secret; retrying", "secret", k.Secret.String())
			select {
			case <-k.Loaded():
			default:
				wait, retry = min(retry, every), 2*retry
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// NeedLeaderElection reports false: every replica verifies statuses.
func (*StatusKey) NeedLeaderElection() bool { return false }

// Loaded returns a channel closed once a Load first succeeded: with a
// key, or having refused a Secret of the wrong shape. A Load that failed
// to read or create the Secret does not close it: until one succeeds no
// status is judged without the key it may be signed with.
func (k *StatusKey) Loaded() <-chan struct{} { return k.loadedCh(false) }

// Load reads the Secret once, creating it with a new key when it does not
// exist, and holds its key. It blocks for at most two requests. On a
// failure to read it returns the error and leaves the key held as it was;
// on a failure to create it, the Secret found gone, it returns the error
// and holds no key (a deleted Secret revokes its key); a Secret of the
// wrong shape drops the key (see StatusKey).
func (k *StatusKey) Load(ctx context.Context) (err error) {
	defer func() {
		if err == nil {
			k.loadedCh(true)
		}
	}()
	var s corev1.Secret
	err = k.Reader.Get(ctx, k.Secret, &s)
	if apierrors.IsNotFound(err) {
		key := make([]byte, statusKeyBytes)
		_, _ = rand.Read(key) // never fails (crypto/rand)
		s = corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: k.Secret.Namespace, Name: k.Secret.Name,
				Labels: map[string]string{"app.kubernetes.io/name": "platform-controller"}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{statusKeyField: key},
		}
		err = k.Writer.Create(ctx, &s)
		switch {
		case apierrors.IsAlreadyExists(err):
			// Another replica made it first: take its key.
			err = k.Reader.Get(ctx, k.Secret, &s)
		case err == nil:
			k.Log.Info("status key: created the Secret with a new key; every Release's status is verified under it", "secret", k.Secret.String())
		default:
			// The Secret is gone (deleted to rotate the key): the key it
			// held is revoked, whether or not a new one can be made.
			k.drop()
		}
	}
	if err != nil {
		return err
	}
	key, why := statusKeyOf(&s)
	if why != "" {
		k.refuse(&s, why)
		return nil
	}
	k.mu.Lock()
	changed := !bytes.Equal(k.key, key)
	k.key, k.refused = key, ""
	k.mu.Unlock()
	if changed {
		k.Log.Info("status key: holds the Secret's key", "secret", k.Secret.String())
		if k.OnChange != nil {
			k.OnChange()
		}
	}
	return nil
}

// statusKeyOf returns the key s holds, or why s is not a status key.
func statusKeyOf(s *corev1.Secret) (key []byte, why string) {
	if s.Type != corev1.SecretTypeOpaque {
		return nil, fmt.Sprintf("its type is %q, want %q", s.Type, corev1.SecretTypeOpaque)
	}
	var extra []string
	for name := range s.Data {
		if name != statusKeyField {
			extra = append(extra, name)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		return nil, fmt.Sprintf("it holds data fields %q besides %q", extra, statusKeyField)
	}
	key, ok := s.Data[statusKeyField]
	if !ok {
		return nil, fmt.Sprintf("it holds no data field %q", statusKeyField)
	}
	if len(key) < statusKeyBytes {
		return nil, fmt.Sprintf("its %q is %d bytes, want at least %d", statusKeyField, len(key), statusKeyBytes)
	}
	return key, ""
}

// drop drops the key held, if any, for a Secret found gone.
func (k *StatusKey) drop() {
	k.mu.Lock()
	had := k.key != nil
	k.key = nil
	k.mu.Unlock()
	if had {
		k.Log.Info("status key: the Secret is gone and could not be made again; no status is trusted and verdicts are written without a MAC until it is", "secret", k.Secret.String())
		if k.OnChange != nil {
			k.OnChange()
		}
	}
}

// refuse drops the key for s, a Secret of the wrong shape, and says so
// once per content of s.
func (k *StatusKey) refuse(s *corev1.Secret, why string) {
	k.mu.Lock()
	had := k.key != nil
	again := k.refused == s.ResourceVersion
	k.key, k.refused = nil, s.ResourceVersion
	k.mu.Unlock()
	if !again {
		msg := fmt.Sprintf("the Secret %s is not a status key: %s; it is left as it is, and until it is mended or deleted no Release's status is trusted (each is evaluated as it is met) and verdicts are written without a MAC", k.Secret, why)
		k.Log.Error(errors.New(why), "status key: refused the Secret", "secret", k.Secret.String(), "detail", msg)
		if k.Recorder != nil {
			k.Recorder.Eventf(s, nil, corev1.EventTypeWarning, "StatusKeyRefused", "VerifyStatus", "%s", msg)
		}
	}
	if had && k.OnChange != nil {
		k.OnChange()
	}
}

// held returns the key, nil when none is held.
func (k *StatusKey) held() []byte {
	if k == nil {
		return nil
	}
	k.mu.RLock()
	defer k.mu.RUnlock()
	return k.key
}

// signed is what a MAC covers: a verdict, the Release it is for and the
// spec generation it observed (status.ObservedGeneration).
type signed struct {
	UID                types.UID
	ObservedGeneration int64
	PlatformGeneration int64
	Instance           string
	Resources          []v1alpha1.RenderedResource
	ResourceCount      int32
	ResourcesDigest    string
	Diagnostics        []string
	InputsDigest       string
	DependenciesDigest string
	Status             metav1.ConditionStatus
	Reason             string
	Message            string
	CondGeneration     int64
}

// mac returns the MAC of the verdict status (its MAC and conditions
// aside) with its Rendered condition c, for the Release uid, under key.
func mac(key []byte, uid types.UID, status *v1alpha1.ReleaseStatus, c *metav1.Condition) string {
	// An empty list is stored as none (omitempty): the two sign alike.
	resources, diagnostics := status.Resources, status.Diagnostics
	if len(resources) == 0 {
		resources = nil
	}
	if len(diagnostics) == 0 {
		diagnostics = nil
	}
	b, err := json.Marshal(signed{
		UID: uid, ObservedGeneration: status.ObservedGeneration, PlatformGeneration: status.PlatformGeneration,
		Instance: status.Instance, Resources: resources, ResourceCount: status.ResourceCount,
		ResourcesDigest: status.ResourcesDigest, Diagnostics: diagnostics,
		InputsDigest: status.InputsDigest, DependenciesDigest: status.DependenciesDigest,
		Status: c.Status, Reason: c.Reason, Message: c.Message, CondGeneration: c.ObservedGeneration,
	})
	if err != nil {
		panic(err) // strings and numbers only: it cannot fail
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte("leasekit.dev/examples/controller release verdict mac v1\n"))
	h.Write(b)
	return macPrefix + hex.EncodeToString(h.Sum(nil))
}

// Sign returns the MAC of the verdict status with its Rendered condition
// c for the Release uid, or "" when no key is held.
func (k *StatusKey) Sign(uid types.UID, status *v1alpha1.ReleaseStatus, c *metav1.Condition) string {
	key := k.held()
	if key == nil {
		return ""
	}
	return mac(key, uid, status, c)
}

// Verify reports whether status.MAC is the MAC of the verdict status
// with its Rendered condition c for the Release uid under the key held;
// false when no key is held.
func (k *StatusKey) Verify(uid types.UID, status *v1alpha1.ReleaseStatus, c *metav1.Condition) bool {
	key := k.held()
	if key == nil || status.MAC == "" {
		return false
	}
	return hmac.Equal([]byte(status.MAC), []byte(mac(key, uid, status, c)))
}
