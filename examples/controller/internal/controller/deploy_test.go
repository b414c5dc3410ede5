package controller_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
	"leasekit.dev/examples/controller/internal/ring"
	"leasekit.dev/examples/controller/internal/shard"
	"leasekit.dev/platform/isolate"
)

// KustomizeEnv names the environment variable holding the kustomize
// binary the deploy test builds config/default with.
const KustomizeEnv = "LEASEKIT_KUSTOMIZE"

// unexercised lists the rules config/rbac grants the controller that the
// deploy test's life cycle does not exercise, each with the reason it is
// granted all the same. A rule granted, unexercised and missing here fails
// the test; so does a rule listed here that is exercised, or not granted.
var unexercised = map[rule]string{
	{"events.k8s.io", "events", "patch", ""}: "the event recorder patches an event into a series when it repeats, on a 30-minute heartbeat: no test waits that long",
	{"", "events", "patch", ""}:              "the leader elector's recorder patches the count of an event repeated within ten minutes: the life cycle is elected once and stops once",
}

// exercisedOrNot lists the rules config/rbac grants the controller that
// the life cycle may or may not exercise, as the API server answers, each
// with the reason it is granted. Either way passes; a rule listed here
// and not granted fails the test.
var exercisedOrNot = map[rule]string{
	{"examples.leasekit.dev", "platforms", "list", ""}: "the cache's informers fill with a streaming watch (sendInitialEvents) where the API server serves one, as this one does, and list when it does not or ends the stream with an error",
	{"examples.leasekit.dev", "releases", "list", ""}:  "as for platforms",
}

// rule is one verb on one resource of one API group, a granted rule
// expanded: a resource's subresource is resource/subresource. name is the
// one object a rule limited by resourceNames allows, empty for any.
type rule struct{ group, resource, verb, name string }

func (r rule) String() string {
	g := r.group
	if g == "" {
		g = "core"
	}
	if r.name != "" {
		return fmt.Sprintf("%s %s.%s named %s", r.verb, r.resource, g, r.name)
	}
	return fmt.Sprintf("%s %s.%s", r.verb, r.resource, g)
}

// testDeploy deploys config/default as an operator would, server-side
// with every API warning fatal, into a namespace enforcing the restricted
// Pod Security Standard, then runs a manager with the deployed
// ServiceAccount's identity (impersonated; the API server authorizes with
// RBAC) through a Platform's and a Release's life, from the samples, and
// scrapes its metrics endpoint as the deployed metrics Service would be.
// The API server's audit log then shows no request of the ServiceAccount
// refused, and every rule granted to it exercised (or listed in
// unexercised with its reason).
func testDeploy(t *testing.T) { testDeployOf(t, "default") }

// testDeploySharded is testDeploy of config/sharded: the manager runs as
// a member of a ring (of one), through a restart with its identity.
func testDeploySharded(t *testing.T) { testDeployOf(t, "sharded") }

// testDeployOf deploys config/<overlay>; "sharded" runs the manager as a
// ring member, as that overlay's Deployment does.
func testDeployOf(t *testing.T, overlay string) {
	sharded := overlay == "sharded"
	kustomize := os.Getenv(KustomizeEnv)
	if kustomize == "" {
		t.Skip("kustomize not given; run: " + KustomizeEnv + "=$(tools/kustomize/build.sh) KUBEBUILDER_ASSETS=$(tools/envtest/assets.sh) go test ./examples/controller/...")
	}
	ctx := context.Background()
	dir := t.TempDir()
	audit := filepath.Join(dir, "audit.log")
	policy := filepath.Join(dir, "audit-policy.yaml")
	const everyRequest = "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nrules:\n- level: Metadata\n"
	if err := os.WriteFile(policy, []byte(everyRequest), 0o600); err != nil {
		t.Fatal(err)
	}
	env := patient(&envtest.Environment{})
	env.ControlPlane.GetAPIServer().Configure().
		// RBAC alone: no request of the ServiceAccount is allowed by any
		// other authorizer. (envtest's default too; set so it stays.)
		Set("authorization-mode", "RBAC").
		Set("audit-policy-file", policy).
		Set("audit-log-path", audit).
		Set("audit-log-format", "json").
		Set("audit-log-mode", "blocking")
	admin, stopAPIServer := startAPIServer(t, env)
	t.Cleanup(stopAPIServer)

	objs := kustomizeBuild(t, kustomize, filepath.Join("..", "..", "config", overlay))
	ns, sa := deployedIdentity(t, objs)
	warnings := &warningLog{}
	applier := rest.CopyConfig(admin)
	applier.WarningHandler = warnings
	c, err := client.New(applier, client.Options{Scheme: deployScheme()})
	if err != nil {
		t.Fatal(err)
	}
	apply(t, c, objs)
	if w := warnings.all(); len(w) > 0 {
		t.Fatalf("applying config/%s drew %d API warning(s):\n%s", overlay, len(w), strings.Join(w, "\n"))
	}
	var gotNS corev1.Namespace
	if err := c.Get(ctx, client.ObjectKey{Name: ns}, &gotNS); err != nil {
		t.Fatal(err)
	}
	if l := gotNS.Labels["pod-security.kubernetes.io/enforce"]; l != "restricted" {
		t.Fatalf("namespace %s enforces Pod Security %q, want restricted", ns, l)
	}
	establish(t, c, objs)

	// The manager as the Deployment runs it, with the ServiceAccount's
	// identity.
	user := fmt.Sprintf("system:serviceaccount:%s:%s", ns, sa)
	asSA := rest.CopyConfig(admin)
	asSA.Impersonate = rest.ImpersonationConfig{
		UserName: user,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
	}
	metricsAddr := freeAddr(t)
	// start starts the manager as the Deployment runs it, its metrics on
	// addr; with sharded, as ring member identity.
	start := func(addr, identity string) (stop func() error, member *shard.Member, apiReader client.Reader) {
		t.Helper()
		opts := ctrl.Options{
			Scheme: newScheme(),
			Metrics: metricsserver.Options{
				BindAddress: addr, SecureServing: true,
				FilterProvider: filters.WithAuthenticationAndAuthorization,
			},
			HealthProbeBindAddress:        "0",
			LeaderElection:                !sharded,
			LeaderElectionID:              leaseID,
			LeaderElectionNamespace:       ns,
			LeaderElectionReleaseOnCancel: true,
			Controller:                    config.Controller{SkipNameValidation: ptr.To(true)},
		}
		if sharded {
			kube, err := kubernetes.NewForConfig(asSA)
			if err != nil {
				t.Fatal(err)
			}
			member = newMember(t, kube, ns, identity, ctrl.Log.WithName("ring"))
			opts.Cache.NewInformer = controller.RingInformer(member)
		}
		mgr, err := ctrl.NewManager(asSA, opts)
		if err != nil {
			t.Fatal(err)
		}
		// As deployed, two workers; their time budget is the Failover
		// subtests', so that no render is killed for time on a slow machine.
		ws := &isolate.Workers{Size: 2, Timeout: failoverTimeout, Memory: 8 << 30}
		if err := mgr.Add(closeOnStop{ws}); err != nil {
			t.Fatal(err)
		}
		if _, err := controller.Setup(mgr, controller.Config{
			PlatformDir: filepath.Join(dir, "platform-"+identity), NoSync: true,
			Registerer: prometheus.NewRegistry(), Evaluator: ws,
			// As deployed (--warm-standby=true): the standby controllers run too.
			WarmStandby: !sharded,
			Ring:        member,
			// As deployed: the status key's Secret in the pod's namespace.
			StatusKey: types.NamespacedName{Namespace: ns, Name: controller.DefaultStatusKeyName},
		}); err != nil {
			t.Fatal(err)
		}
		return startManager(mgr), member, mgr.GetAPIReader()
	}
	stop, member, apiReader := start(metricsAddr, "replica-0")
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = stop()
		}
	})

	// The samples, applied as the README says, reach Ready and Rendered.
	samples := kustomizeBuild(t, kustomize, filepath.Join("..", "..", "config", "samples"))
	apply(t, c, samples)
	if w := warnings.all(); len(w) > 0 {
		t.Fatalf("applying config/samples drew API warning(s):\n%s", strings.Join(w, "\n"))
	}
	relKey := sampleRelease(t, samples)
	platformReady(t, c, 1)
	releaseRendered(t, c, relKey, 1)

	// The rest of the life: the Platform changes and the Release renders
	// again; the Release changes and renders again; both are deleted.
	var p v1alpha1.Platform
	if err := c.Get(ctx, platformKey, &p); err != nil {
		t.Fatal(err)
	}
	p.Spec.Labels["tier"] = "gold"
	if err := c.Update(ctx, &p); err != nil {
		t.Fatal(err)
	}
	platformReady(t, c, p.Generation)
	releaseRendered(t, c, relKey, p.Generation)
	var rel v1alpha1.Release
	if err := c.Get(ctx, relKey, &rel); err != nil {
		t.Fatal(err)
	}
	rel.Spec.Files["shop.cue"] = strings.Replace(rel.Spec.Files["shop.cue"], "replicas: 2", "replicas: 3", 1)
	if err := c.Update(ctx, &rel); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the changed Release rendered", func() error {
		var got v1alpha1.Release
		if err := c.Get(ctx, relKey, &got); err != nil {
			return err
		}
		if got.Status.ObservedGeneration != got.Generation || got.Generation < 2 {
			return fmt.Errorf("observed generation %d of %d", got.Status.ObservedGeneration, got.Generation)
		}
		return nil
	})

	scrape(t, admin, c, objs, metricsAddr)

	// A status write that conflicts reads its Release again past the
	// cache, through the manager's APIReader; the life cycle meets a
	// conflict only when a write races the cache. The read is made here
	// as the reconciler makes it, so the rule is exercised on every run.
	if err := apiReader.Get(ctx, relKey, &v1alpha1.Release{}); err != nil {
		t.Fatalf("read the Release past the cache as the controller: %v", err)
	}
	// Events are recorded asynchronously: wait for the ones the life cycle
	// recorded to be stored before the manager stops, so that their rules
	// are exercised on every run.
	if sharded {
		// A restart with the same identity, its Lease left behind: the
		// new run reads it back and takes it over, claiming nothing, and
		// takes the whole space again.
		member.Abandon()
		if err := stop(); err != nil {
			t.Fatalf("stop the manager: %v", err)
		}
		stop, member, _ = start("0", "replica-0")
		eventually(t, "the restarted member writes for the whole space", func() error {
			if w := member.Status().Writing; !w.Equal(ring.Full()) {
				return fmt.Errorf("writes for %v", w)
			}
			return nil
		})
	}
	eventually(t, "the leader election's event stored", func() error {
		if sharded {
			return nil // no leader election
		}
		var evs corev1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "LeaderElection" {
				return nil
			}
		}
		return fmt.Errorf("%d event(s) in %s, none of reason LeaderElection", len(evs.Items), ns)
	})
	eventually(t, "the Release's Rendered event stored", func() error {
		var evs eventsv1.EventList
		if err := c.List(ctx, &evs, client.InNamespace(relKey.Namespace)); err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Regarding.Kind == "Release" && e.Regarding.Name == relKey.Name && e.Reason == v1alpha1.ReasonRendered {
				return nil
			}
		}
		return fmt.Errorf("%d event(s) in %s, none Rendered for the Release", len(evs.Items), relKey.Namespace)
	})

	if err := c.Delete(ctx, &rel); err != nil {
		t.Fatal(err)
	}
	if err := c.Delete(ctx, &p); err != nil {
		t.Fatal(err)
	}
	stopped = true
	if err := stop(); err != nil {
		t.Fatalf("stop the manager: %v", err)
	}

	if sharded {
		eventually(t, "the member's Lease deleted on a clean stop", func() error {
			var l coordinationv1.LeaseList
			if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
				return err
			}
			if len(l.Items) != 0 {
				return fmt.Errorf("%d Lease(s) left", len(l.Items))
			}
			return nil
		})
	}
	exercised, refused := readAudit(t, audit, user)
	if len(refused) > 0 {
		t.Errorf("the API server refused %d request(s) of %s:\n%s", len(refused), user, strings.Join(refused, "\n"))
	}
	granted := grantedRules(t, objs, ns, sa)
	for _, r := range granted {
		if _, either := exercisedOrNot[r]; either {
			continue
		}
		reason, listed := unexercised[r]
		switch {
		case exercised[r] && listed:
			t.Errorf("rule %s is listed as unexercised (%s) but the life cycle exercised it: drop it from the list", r, reason)
		case !exercised[r] && !listed:
			t.Errorf("rule %s is granted but the life cycle never exercised it: remove it from config/rbac, or list it with its reason", r)
		}
	}
	for r := range unexercised {
		if sharded && r == (rule{"", "events", "patch", ""}) {
			continue // the leader elector's: no elector in a ring
		}
		if !slices.Contains(granted, r) {
			t.Errorf("rule %s is listed as unexercised but not granted: drop it from the list", r)
		}
	}
	for r := range exercisedOrNot {
		if !slices.Contains(granted, r) {
			t.Errorf("rule %s is listed as exercised or not but not granted: drop it from the list", r)
		}
	}
}

// deployScheme is newScheme with the CustomResourceDefinition, which the
// test reads back to wait until the deployed CRDs are established.
func deployScheme() *runtime.Scheme {
	s := newScheme()
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	return s
}

// warningLog collects the API server's warnings.
type warningLog struct {
	mu sync.Mutex
	w  []string
}

func (l *warningLog) HandleWarningHeader(code int, agent, text string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.w = append(l.w, text)
}

func (l *warningLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.w)
}

// kustomizeBuild runs 'kustomize build dir' and returns its objects in
// order.
func kustomizeBuild(t *testing.T, kustomize, dir string) []*unstructured.Unstructured {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command(kustomize, "build", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kustomize build %s: %v\n%s", dir, err, stderr.String())
	}
	var objs []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		var u unstructured.Unstructured
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("kustomize build %s: output: %v", dir, err)
		}
		if len(u.Object) > 0 {
			objs = append(objs, &u)
		}
	}
	if len(objs) == 0 {
		t.Fatalf("kustomize build %s: no objects", dir)
	}
	return objs
}

// apply applies objs server-side, in order, as a field manager of its
// own.
func apply(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, u := range objs {
		err := c.Apply(context.Background(), client.ApplyConfigurationFromUnstructured(u.DeepCopy()),
			client.FieldOwner("deploy-test"), client.ForceOwnership)
		if err != nil {
			t.Fatalf("apply %s %s: %v", u.GetKind(), client.ObjectKeyFromObject(u), err)
		}
	}
}

// establish waits until every CRD among objs is established.
func establish(t *testing.T, c client.Client, objs []*unstructured.Unstructured) {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() != "CustomResourceDefinition" {
			continue
		}
		eventually(t, "CRD "+u.GetName()+" established", func() error {
			var crd apiextensionsv1.CustomResourceDefinition
			if err := c.Get(context.Background(), client.ObjectKey{Name: u.GetName()}, &crd); err != nil {
				return err
			}
			for _, cond := range crd.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
			return errors.New("not established")
		})
	}
}

// deployedIdentity returns the namespace and the name of the
// ServiceAccount the Deployment among objs runs as.
func deployedIdentity(t *testing.T, objs []*unstructured.Unstructured) (ns, sa string) {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		name, _, _ := unstructured.NestedString(u.Object, "spec", "template", "spec", "serviceAccountName")
		if name == "" {
			t.Fatalf("Deployment %s names no ServiceAccount", u.GetName())
		}
		return u.GetNamespace(), name
	}
	t.Fatal("config/default holds no Deployment")
	return "", ""
}

// sampleRelease returns the key of the Release among the samples.
func sampleRelease(t *testing.T, objs []*unstructured.Unstructured) client.ObjectKey {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() == "Release" {
			return client.ObjectKeyFromObject(u)
		}
	}
	t.Fatal("config/samples holds no Release")
	return client.ObjectKey{}
}

func platformReady(t *testing.T, c client.Client, gen int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("the Platform Ready at generation %d", gen), func() error {
		var p v1alpha1.Platform
		if err := c.Get(context.Background(), platformKey, &p); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.PlatformReady)
		if cond == nil || cond.Status != metav1.ConditionTrue || p.Status.PublishedGeneration != gen {
			return fmt.Errorf("published %d, Ready %+v", p.Status.PublishedGeneration, cond)
		}
		return nil
	})
}

func releaseRendered(t *testing.T, c client.Client, key client.ObjectKey, gen int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("Release %s Rendered against generation %d", key, gen), func() error {
		var rel v1alpha1.Release
		if err := c.Get(context.Background(), key, &rel); err != nil {
			return err
		}
		cond := meta.FindStatusCondition(rel.Status.Conditions, v1alpha1.ReleaseRendered)
		if cond == nil || cond.Status != metav1.ConditionTrue || rel.Status.PlatformGeneration != gen {
			return fmt.Errorf("platform generation %d, Rendered %+v", rel.Status.PlatformGeneration, cond)
		}
		return nil
	})
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// scrape checks the metrics endpoint as deployed: no token is refused
// (401), a ServiceAccount without the metrics-reader ClusterRole is
// refused (403), and one bound to it reads the metrics.
func scrape(t *testing.T, admin *rest.Config, c client.Client, objs []*unstructured.Unstructured, addr string) {
	t.Helper()
	ctx := context.Background()
	var reader string
	for _, u := range objs {
		if u.GetKind() == "ClusterRole" && strings.HasSuffix(u.GetName(), "metrics-reader") {
			reader = u.GetName()
		}
	}
	if reader == "" {
		t.Fatal("config/default holds no metrics-reader ClusterRole")
	}
	kube, err := kubernetes.NewForConfig(admin)
	if err != nil {
		t.Fatal(err)
	}
	token := func(name string) string {
		t.Helper()
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}}
		if err := c.Create(ctx, sa); err != nil {
			t.Fatal(err)
		}
		tr, err := kube.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authenticationv1.TokenRequest{
			Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("token for %s: %v", name, err)
		}
		return tr.Status.Token
	}
	scraper, stranger := token("scraper"), token("stranger")
	if err := c.Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scraper-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: reader},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: "default"}},
	}); err != nil {
		t.Fatal(err)
	}
	hc := &http.Client{Transport: &http.Transport{
		// The metrics server's certificate is self-signed.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec
	}}
	get := func(token string) (int, string, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			return 0, "", err
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), err
	}
	for _, c := range []struct {
		who, token string
		want       int
	}{{"no token", "", http.StatusUnauthorized}, {"a stranger", stranger, http.StatusForbidden}, {"the scraper", scraper, http.StatusOK}} {
		// The RBAC cache may lag the binding just created: wait for the
		// answer, which a correct filter reaches.
		var body string
		eventually(t, "metrics scraped by "+c.who+" answer "+http.StatusText(c.want), func() error {
			code, b, err := get(c.token)
			if err != nil {
				return err
			}
			if code != c.want {
				return fmt.Errorf("status %d: %.200s", code, b)
			}
			body = b
			return nil
		})
		if c.want == http.StatusOK && !strings.Contains(body, "controller_runtime_reconcile_total") {
			t.Errorf("the scraped metrics lack controller_runtime_reconcile_total:\n%.500s", body)
		}
	}
}

// auditEvent is the part of an audit.k8s.io/v1 Event the test reads.
type auditEvent struct {
	Stage            string `json:"stage"`
	Verb             string `json:"verb"`
	RequestURI       string `json:"requestURI"`
	User             struct{ Username string }
	ImpersonatedUser *struct{ Username string } `json:"impersonatedUser"`
	ObjectRef        *struct {
		Resource, Namespace, Name, APIGroup, Subresource string
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
}

// readAudit reads the audit log for user's completed requests: the rules
// they exercised (a request authorized, whatever its answer), and a line
// for each one refused with 403.
func readAudit(t *testing.T, path, user string) (exercised map[rule]bool, refused []string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the audit log: %v", err)
	}
	defer f.Close()
	exercised = make(map[rule]bool)
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	seen := 0
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("the audit log: %v", err)
		}
		who := e.User.Username
		if e.ImpersonatedUser != nil {
			who = e.ImpersonatedUser.Username
		}
		if who != user || e.Stage != "ResponseComplete" || e.ResponseStatus == nil {
			continue
		}
		seen++
		if e.ResponseStatus.Code == http.StatusForbidden {
			refused = append(refused, fmt.Sprintf("%s %s", e.Verb, e.RequestURI))
			continue
		}
		// Any other answer was authorized, a 404 or a 409 too: the rule
		// was used.
		if e.ResponseStatus.Code == http.StatusUnauthorized || e.ObjectRef == nil {
			continue
		}
		res := e.ObjectRef.Resource
		if e.ObjectRef.Subresource != "" {
			res += "/" + e.ObjectRef.Subresource
		}
		exercised[rule{e.ObjectRef.APIGroup, res, e.Verb, ""}] = true
		if e.ObjectRef.Name != "" {
			// A rule limited to this object's name is used too.
			exercised[rule{e.ObjectRef.APIGroup, res, e.Verb, e.ObjectRef.Name}] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("the audit log: %v", err)
	}
	if seen == 0 {
		t.Fatalf("the audit log holds no request of %s", user)
	}
	return exercised, refused
}

// grantedRules returns the rules objs grant the ServiceAccount ns/sa
// through their (Cluster)RoleBindings, expanded to one verb on one
// resource each, sorted.
func grantedRules(t *testing.T, objs []*unstructured.Unstructured, ns, sa string) []rule {
	t.Helper()
	roles := make(map[string][]rbacv1.PolicyRule) // kind/namespace/name
	var bindings []struct {
		ns      string
		ref     rbacv1.RoleRef
		subject []rbacv1.Subject
	}
	for _, u := range objs {
		switch u.GetKind() {
		case "ClusterRole", "Role":
			var r rbacv1.ClusterRole // a Role's rules read the same
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &r); err != nil {
				t.Fatal(err)
			}
			roles[u.GetKind()+"/"+u.GetNamespace()+"/"+u.GetName()] = r.Rules
		case "ClusterRoleBinding", "RoleBinding":
			var b rbacv1.RoleBinding
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &b); err != nil {
				t.Fatal(err)
			}
			bindings = append(bindings, struct {
				ns      string
				ref     rbacv1.RoleRef
				subject []rbacv1.Subject
			}{u.GetNamespace(), b.RoleRef, b.Subjects})
		}
	}
	set := make(map[rule]bool)
	for _, b := range bindings {
		if !slices.ContainsFunc(b.subject, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == sa && s.Namespace == ns
		}) {
			continue
		}
		key := b.ref.Kind + "/"
		if b.ref.Kind == "Role" {
			key += b.ns
		}
		rules, ok := roles[key+"/"+b.ref.Name]
		if !ok {
			t.Fatalf("a binding of %s/%s refers to %s %s, which config/default does not hold", ns, sa, b.ref.Kind, b.ref.Name)
		}
		for _, pr := range rules {
			if len(pr.NonResourceURLs) > 0 {
				t.Fatalf("rule %+v: the test expands resource rules only", pr)
			}
			names := pr.ResourceNames
			if len(names) == 0 {
				names = []string{""}
			}
			for _, g := range pr.APIGroups {
				for _, res := range pr.Resources {
					for _, v := range pr.Verbs {
						for _, name := range names {
							set[rule{g, res, v, name}] = true
						}
					}
				}
			}
		}
	}
	if len(set) == 0 {
		t.Fatalf("config/default grants %s/%s nothing", ns, sa)
	}
	out := make([]rule, 0, len(set))
	for r := range set {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b rule) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// recipes are the ways to deploy the controller that
// examples/controller/README.md gives, each one overlay of config/ and
// the same commands in its directory: set the image, build, apply.
var recipes = []struct {
	dir      string
	replicas int64
	ring     bool
}{
	{"default", 2, false},
	{"single", 1, false},
	{"sharded", 3, true},
}

// TestRecipes follows each recipe as a user does, on a copy of config/:
// 'kustomize edit set image controller=IMAGE' in the recipe's directory,
// then 'kustomize build', and checks what it builds: one Deployment, of
// the recipe's replicas, every container running IMAGE (no placeholder
// left), in a ring or electing a leader as the recipe says. The README
// must give each recipe's directory. It runs when LEASEKIT_KUSTOMIZE
// names a kustomize binary; it needs no API server.
func TestRecipes(t *testing.T) {
	kustomize := os.Getenv(KustomizeEnv)
	if kustomize == "" {
		t.Skip("kustomize not given; run: " + KustomizeEnv + "=$(tools/kustomize/build.sh) go test -run TestRecipes ./examples/controller/internal/controller")
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const image = "registry.example/leasekit-controller:v1.2.3"
	for _, r := range recipes {
		t.Run(r.dir, func(t *testing.T) {
			if cd := "cd examples/controller/config/" + r.dir + "\n"; !strings.Contains(string(readme), cd) {
				t.Errorf("examples/controller/README.md does not give the recipe's first command, %q", strings.TrimSpace(cd))
			}
			config := filepath.Join(t.TempDir(), "config")
			if err := os.CopyFS(config, os.DirFS(filepath.Join("..", "..", "config"))); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(config, r.dir)
			cmd := exec.Command(kustomize, "edit", "set", "image", "controller="+image)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("kustomize edit set image in config/%s: %v\n%s", r.dir, err, out)
			}
			var deployments []*unstructured.Unstructured
			for _, u := range kustomizeBuild(t, kustomize, dir) {
				if u.GetKind() == "Deployment" {
					deployments = append(deployments, u)
				}
			}
			if len(deployments) != 1 {
				t.Fatalf("config/%s builds %d Deployments, want 1", r.dir, len(deployments))
			}
			d := deployments[0]
			// The YAML decoder reads a number as int64 or float64.
			if n, _, _ := unstructured.NestedFieldNoCopy(d.Object, "spec", "replicas"); fmt.Sprint(n) != fmt.Sprint(r.replicas) {
				t.Errorf("config/%s: %v replicas, want %d", r.dir, n, r.replicas)
			}
			containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
			if len(containers) == 0 {
				t.Fatalf("config/%s: the Deployment has no container", r.dir)
			}
			ring := false
			for _, c := range containers {
				c, _ := c.(map[string]any)
				if got, _, _ := unstructured.NestedString(c, "image"); got != image {
					t.Errorf("config/%s: container %v runs image %q, not the one set, %q", r.dir, c["name"], got, image)
				}
				args, _, _ := unstructured.NestedStringSlice(c, "args")
				ring = ring || slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--ring=") })
			}
			if ring != r.ring {
				t.Errorf("config/%s: runs as a ring %v, want %v", r.dir, ring, r.ring)
			}
		})
	}
}
