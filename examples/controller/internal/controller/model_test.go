package controller_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"leasekit.dev/examples/controller/api/v1alpha1"
)

// specKind is what a drawn spec does when published.
type specKind int

const (
	specValid   specKind = iota // builds; its catalog version names the variant
	specInvalid                 // the generator refuses it
	specBroken                  // generates, but the kernel's build fails
	specDeep                    // generates, but nests past the kernel's MaxDepth
)

func drawnSpec(kind specKind, variant int) v1alpha1.PlatformSpec {
	spec := acme()
	spec.Catalogs[0].Version = fmt.Sprintf("v1.%d.0", variant)
	switch kind {
	case specInvalid:
		spec.Catalogs[0].Version = "1.x"
	case specBroken:
		spec.Overlay = "name: \"other\"\n"
	case specDeep:
		spec.Overlay = "x: " + strings.Repeat("a: ", 101) /* past the default Limits.MaxDepth, 100 */ + "1\n"
	}
	return spec
}

// heldLease is a lease a render holds in the model, with what its
// directory held when it was taken.
type heldLease struct {
	gen      int64
	dir      string
	content  []byte
	release  func()
	released bool
}

// TestPlatformReconcilerModel drives the Platform reconciler through random
// creates, spec updates (valid, refused by the generator, failing the
// build), deletes, reconciles, leases and releases, against a plain model
// of what is served. After every step: the store serves what the model
// says, the status agrees, and every leased directory is on disk with the
// contents it had when leased.
func TestPlatformReconcilerModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		f := newFixture(t, true)
		ctx := context.Background()

		var (
			exists     bool
			uid        types.UID
			uids       int
			generation int64
			kind       specKind
			variant    int

			servedGen     int64
			servedUID     types.UID
			servedVariant int
			reconciled    bool // the object has been reconciled since its last change
			leases        []*heldLease
		)

		rt.Repeat(map[string]func(*rapid.T){
			"create": func(rt *rapid.T) {
				if exists {
					rt.Skip("exists")
				}
				uids++
				uid = types.UID(fmt.Sprintf("uid-%d", uids))
				generation, kind, variant = 1, specValid, rapid.IntRange(0, 3).Draw(rt, "variant")
				p := newPlatform(drawnSpec(kind, variant), generation)
				p.UID = uid
				if err := f.client.Create(ctx, p); err != nil {
					rt.Fatal(err)
				}
				exists, reconciled = true, false
			},
			"update": func(rt *rapid.T) {
				if !exists {
					rt.Skip("absent")
				}
				kind = specKind(rapid.IntRange(0, 3).Draw(rt, "kind"))
				variant = rapid.IntRange(0, 3).Draw(rt, "variant")
				generation++
				f.setSpec(t, drawnSpec(kind, variant), generation)
				reconciled = false
			},
			"delete": func(rt *rapid.T) {
				if !exists {
					rt.Skip("absent")
				}
				if err := f.client.Delete(ctx, newPlatform(acme(), 0)); err != nil {
					rt.Fatal(err)
				}
				exists, reconciled = false, false
			},
			"reconcile": func(rt *rapid.T) {
				if exists && kind != specInvalid && (servedUID != uid || servedGen != generation) {
					// Publishing generation waits until no render holds
					// a directory of that number: an earlier object's
					// generation of the same number is never rewritten
					// while leased. The renders holding one end first.
					for _, l := range leases {
						if l.gen == generation && !l.released {
							l.release()
							l.released = true
						}
					}
				}
				_, err := f.platform.Reconcile(ctx, ctrl.Request{NamespacedName: platformKey})
				terminal := errors.Is(err, reconcile.TerminalError(nil))
				if err != nil && !terminal {
					rt.Fatalf("Reconcile: %v", err)
				}
				if exists && terminal != (kind != specValid) {
					rt.Fatalf("Reconcile of a spec of kind %d: %v; want a terminal error exactly for a spec that cannot build", kind, err)
				}
				reconciled = true
				if !exists {
					servedGen, servedUID = 0, ""
					return
				}
				if servedUID != uid {
					servedGen = 0
				}
				if kind == specValid {
					servedGen, servedUID, servedVariant = generation, uid, variant
				}
			},
			"lease": func(rt *rapid.T) {
				g, release, ok := f.pub.Store().Lease()
				if !ok {
					rt.Skip("nothing served")
				}
				content, err := os.ReadFile(filepath.Join(g.Dir, "platform.cue"))
				if err != nil {
					rt.Fatalf("a leased directory: %v", err)
				}
				leases = append(leases, &heldLease{gen: g.Generation, dir: g.Dir, content: content, release: release})
			},
			"release": func(rt *rapid.T) {
				var open []*heldLease
				for _, l := range leases {
					if !l.released {
						open = append(open, l)
					}
				}
				if len(open) == 0 {
					rt.Skip("no lease held")
				}
				l := rapid.SampledFrom(open).Draw(rt, "lease")
				l.release()
				l.released = true
			},
			"": func(rt *rapid.T) {
				g, ok := f.pub.Store().Generated()
				if g.Generation != servedGen || ok != (servedGen != 0) {
					rt.Fatalf("store serves %d (%v), model %d", g.Generation, ok, servedGen)
				}
				if ok {
					want := fmt.Sprintf("v1.%d.0", servedVariant)
					if v := g.Platform.Catalogs[0].Version; v != want {
						rt.Fatalf("served catalog version %s, model %s", v, want)
					}
				}
				onDisk := onDisk(f.pub.Stats())
				if servedGen != 0 && !slices.Contains(onDisk, servedGen) {
					rt.Fatalf("served generation %d not on disk %v", servedGen, onDisk)
				}
				for _, l := range leases {
					if l.released {
						continue
					}
					b, err := os.ReadFile(filepath.Join(l.dir, "platform.cue"))
					if err != nil || !bytes.Equal(b, l.content) {
						rt.Fatalf("leased generation %d's directory changed: %v", l.gen, err)
					}
				}
				if !exists || !reconciled {
					return
				}
				var p v1alpha1.Platform
				if err := f.client.Get(ctx, platformKey, &p); err != nil {
					rt.Fatal(err)
				}
				if p.Status.ObservedGeneration != generation || p.Status.PublishedGeneration != servedGen {
					rt.Fatalf("status observed %d published %d; model %d, %d", p.Status.ObservedGeneration, p.Status.PublishedGeneration, generation, servedGen)
				}
				ready := meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.PlatformReady)
				if ready != (servedGen == generation) {
					rt.Fatalf("Ready %v with generation %d served %d", ready, generation, servedGen)
				}
				failed := meta.IsStatusConditionTrue(p.Status.Conditions, v1alpha1.PlatformBuildFailed)
				if failed != (kind != specValid) {
					rt.Fatalf("BuildFailed %v for a spec of kind %d", failed, kind)
				}
				if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.PlatformStale); c != nil && c.Status == metav1.ConditionTrue {
					rt.Fatalf("Stale: %s", c.Message)
				}
			},
		})
		for _, l := range leases {
			if !l.released {
				l.release()
			}
		}
	})
}
