package controller_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
	"leasekit.dev/platform/kernel"
)

const webPath = "example.com/catalogs/web@v1"

// newScheme returns a scheme with the built-in types and this example's.
func newScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(v1alpha1.AddToScheme(s))
	return s
}

// acme is a Platform spec carrying the web catalog at v1.4.0.
func acme() v1alpha1.PlatformSpec {
	return v1alpha1.PlatformSpec{
		Name:   "acme",
		Labels: map[string]v1alpha1.LabelValue{"team": "platform"},
		Catalogs: []v1alpha1.Catalog{
			{Path: webPath, Version: "v1.4.0", Kinds: []string{"Deployment", "Service"}},
		},
		SkewPolicy: v1alpha1.SkewWarn,
	}
}

// shop is an instance module named shop, requiring the web catalog at
// version, with a Deployment and a Service.
func shop(version string) map[string]string {
	return map[string]string{
		"cue.mod/module.cue": "module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n",
		"shop.cue": `package shop

name: "shop"
requires: "` + webPath + `": "` + version + `"
components: web: {kind: "Deployment", catalog: "` + webPath + `", replicas: 2, spec: {image: "shop:1", port: 8080}}
components: svc: {kind: "Service", catalog: "` + webPath + `", replicas: 0, spec: {image: "shop:1", port: 80}}
`,
	}
}

// newPlatform returns the Platform singleton with spec and generation.
func newPlatform(spec v1alpha1.PlatformSpec, generation int64) *v1alpha1.Platform {
	return &v1alpha1.Platform{
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.PlatformName, Generation: generation},
		Spec:       spec,
	}
}

// eventually calls check until it returns nil: a wait for the
// controller, which no bound of its own decides. Only a controller that
// never gets there fails it, with check's last error, shortly before the
// test binary's -timeout would end the run without saying what it waited
// for. An error no wait can mend (a type the client's scheme lacks) fails
// it at once; a wait past a minute logs what it waits for and check's
// last error, every minute, so a long wait shows in the log as it runs.
func eventually(t testing.TB, what string, check func() error) {
	t.Helper()
	deadline, bounded := time.Time{}, false
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if deadline, bounded = d.Deadline(); bounded {
			deadline = deadline.Add(-15 * time.Second)
		}
	}
	start := time.Now()
	next := start.Add(time.Minute)
	for {
		err := check()
		if err == nil {
			return
		}
		if runtime.IsNotRegisteredError(err) {
			t.Fatalf("%s: %v", what, err)
		}
		if bounded && time.Now().After(deadline) {
			t.Fatalf("%s: still not so as the test's -timeout nears: %v", what, err)
		}
		if now := time.Now(); now.After(next) {
			t.Logf("%s: still waiting after %v: %v", what, now.Sub(start).Round(time.Second), err)
			next = now.Add(time.Minute)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// instanceOf returns files as a kernel instance.
func instanceOf(files map[string]string) kernel.Instance {
	b := make(map[string][]byte, len(files))
	for k, v := range files {
		b[k] = []byte(v)
	}
	return kernel.Instance{Files: b}
}

// statusKey returns the status key of the controller on c, loaded: its
// Secret read, or created when absent. Replicas on one client share it.
func statusKey(t testing.TB, c client.Client) *controller.StatusKey {
	t.Helper()
	k := &controller.StatusKey{Reader: c, Writer: c, Secret: types.NamespacedName{Namespace: "default", Name: controller.DefaultStatusKeyName}}
	if err := k.Load(context.Background()); err != nil {
		t.Fatalf("load the status key: %v", err)
	}
	return k
}
