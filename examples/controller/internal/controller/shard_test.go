package controller_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"leasekit.dev/examples/controller/api/v1alpha1"
	"leasekit.dev/examples/controller/internal/controller"
	"leasekit.dev/examples/controller/internal/ring"
	"leasekit.dev/examples/controller/internal/shard"
)

var shardReleases = flag.Int("shard.releases", 300, "Releases the Shard subtests render, 10 components each")

const (
	shardNamespace = "sharded"
	ringName       = "platform"
	// The ring's timing in the Shard subtests: short, so that a replica
	// killed is replaced within seconds; never asserted.
	ringLease = 4 * time.Second
	ringRenew = time.Second
)

// testShard runs the controller as a ring of replicas on an API server
// with the ShardedListAndWatch feature gate on (serverSide) or off:
// three managers in this process, each with its own platform directory,
// Lease and cache, and *shardReleases Releases. Every status write is
// counted per Release and input (its spec's generation and the platform
// generation it names) and per replica, through each manager's client.
//
// Asserted, on every input change: every Release is written once, by one
// replica; each replica's cache holds only Releases of its cover; the
// replicas know whether the server filtered. Then one manager is killed
// (stopped without releasing its Lease) as the Platform changes: its
// Releases are rendered and written by the others, once each; then a
// manager joins again and the ring rebalances, writing nothing, and
// another Platform change is written once per Release. With serverSide,
// the first change is rendered by one replica and a later one by three:
// the SHARD line logs the speedup, the writes by a second replica or a
// second time (dup_writes, asserted 0), and how long the killed replica's
// Releases waited (orphan_max_ms, from the kill to the last written).
//
// With faults, the managers reach the API server through a proxy on a
// loopback address that refuses a few percent of their requests (409,
// 429 with Retry-After, 500), answers others late and cuts every watch
// after seconds (startFaultProxy); the test's own client goes direct.
// The SHARD line also reports moved: the share of the hash space whose
// owner changed with the kill and with the join.
func testShard(t *testing.T, serverSide, faults bool) {
	n := *shardReleases
	var configure func(*envtest.Environment)
	if serverSide {
		configure = func(env *envtest.Environment) {
			env.ControlPlane.GetAPIServer().Configure().Append("feature-gates", "ShardedListAndWatch=true")
		}
	}
	sc := startScenario(t, shardNamespace, configure)
	defer sc.stop()
	c := sc.client
	log := &statusWrites{releases: map[statusInput][]string{}, platform: map[int64][]string{}}
	dir := t.TempDir()
	replicas := map[string]*replica{}
	mcfg := sc.cfg
	if faults {
		seed := *faultSeed
		if seed == 0 {
			seed = uint64(time.Now().UnixNano())
		}
		t.Logf("the managers reach the API server through a fault-injecting proxy, seed %d (-shard.faultseed=%d replays its draws)", seed, seed)
		mcfg = startFaultProxy(t, sc.cfg, seed)
	}
	startReplica := func(id string) *replica {
		r := newReplica(t, mcfg, log, filepath.Join(dir, id+fmt.Sprint(len(replicas))), id)
		replicas[id] = r
		return r
	}
	defer func() {
		for _, r := range replicas {
			if err := r.stop(); err != nil {
				t.Errorf("stop replica %s: %v", r.id, err)
			}
		}
	}()

	// The first input: a ring of one (with the server's filter, to time
	// it against three), or of three.
	first := []string{"a", "b", "c"}
	if serverSide {
		first = []string{"a"}
	}
	for _, id := range first {
		startReplica(id)
	}
	stable(t, replicas)
	sc.createReleases(t, n)
	written(t, sc, log, n, 1)
	gen := int64(1)
	change := func() (time.Time, time.Duration) {
		t.Helper()
		spec := acme()
		gen++
		spec.Labels["rollout"] = v1alpha1.LabelValue(fmt.Sprintf("r%d", gen))
		begun := time.Now()
		if got := updateSpecWith(t, c, spec); got != gen {
			t.Fatalf("the Platform's generation is %d, want %d", got, gen)
		}
		return begun, written(t, sc, log, n, gen)
	}
	var one, three time.Duration
	var oneRenders, threeRenders renderTime
	if serverSide {
		before := renders(t, replicas)
		_, one = change()
		oneRenders = renders(t, replicas).minus(before)
		log.mark()
		startReplica("b")
		startReplica("c")
		stable(t, replicas)
		log.noWritesSince(t, "the ring rebalanced from one replica to three")
	}
	before := renders(t, replicas)
	_, three = change()
	threeRenders = renders(t, replicas).minus(before)
	checkCaches(t, replicas, serverSide)

	// Kill b as the Platform changes: it stops without releasing its
	// Lease, with writes of its own maybe in flight.
	beforeKill := targets(replicas)
	killed := replicas["b"]
	part := killed.member.Status().Writing
	killed.member.Abandon()
	// How long b's part has no writer: from the kill until the others
	// write for all of it, as they see it.
	killedAt := time.Now()
	ownerless := make(chan time.Duration, 1)
	go func() {
		for {
			var all ring.Set
			for _, id := range []string{"a", "c"} {
				all = all.Union(replicas[id].member.Status().Writing)
			}
			if part.Minus(all).Empty() {
				ownerless <- time.Since(killedAt)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	kill := make(chan error, 1)
	go func() { kill <- killed.stop() }()
	begun, _ := change()
	if err := <-kill; err != nil {
		t.Fatalf("kill b: %v", err)
	}
	orphan := <-ownerless
	delete(replicas, "b")
	t.Logf("b's part %v: without a writer for %v after the kill (a lease is %v); its Releases all written %v after the change",
		part, orphan.Round(time.Millisecond), ringLease, log.lastWrite(part, gen).Sub(begun).Round(time.Millisecond))
	stable(t, replicas)
	afterKill := targets(replicas)

	// b again, with its identity: its Lease is its own, claiming nothing.
	log.mark()
	startReplica("b")
	stable(t, replicas)
	afterJoin := targets(replicas)
	moved := fmt.Sprintf("kill:%.3f,join:%.3f", movedShare(beforeKill, afterKill), movedShare(afterKill, afterJoin))
	log.noWritesSince(t, "the ring rebalanced as b joined again")
	change()
	checkCaches(t, replicas, serverSide)

	dups := log.duplicates()
	for _, d := range dups {
		t.Errorf("written twice: %s", d)
	}
	if serverSide {
		speedup := float64(one) / float64(three)
		t.Logf("SHARD replicas=3 speedup=%.2f dup_writes=%d orphan_max_ms=%d server_side=%v moved=%s", speedup, len(dups), orphan.Milliseconds(), serverSide, moved)
		t.Logf("one replica rendered and wrote %d Releases in %v (%s), three in %v (%s)", n, one.Round(time.Millisecond), oneRenders, three.Round(time.Millisecond), threeRenders)
	} else {
		t.Logf("SHARD replicas=3 dup_writes=%d orphan_max_ms=%d server_side=%v faults=%v moved=%s", len(dups), orphan.Milliseconds(), serverSide, faults, moved)
	}
}

// targets returns each replica's target.
func targets(replicas map[string]*replica) map[string]ring.Set {
	out := map[string]ring.Set{}
	for id, r := range replicas {
		out[id] = r.member.Status().Target
	}
	return out
}

// movedShare returns the share of the hash space whose owner differs
// between two assignments: what each owner after holds that it did not
// hold before.
func movedShare(before, after map[string]ring.Set) float64 {
	moved := 0.0
	for id, s := range after {
		moved += s.Minus(before[id]).Fraction()
	}
	return moved
}

// A replica is one manager of the ring.
type replica struct {
	id       string
	mgr      ctrl.Manager
	member   *shard.Member
	wiring   *controller.Wiring
	registry *prometheus.Registry
	stop     func() error
}

// newReplica starts a manager with identity id in the ring, its
// Publisher owning dir, evaluating in this process one render at a time
// (so that three replicas render three at a time), its status writes
// recorded in log.
func newReplica(t *testing.T, cfg *rest.Config, log *statusWrites, dir, id string) *replica {
	t.Helper()
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	member := newMember(t, kube, leaseNamespace, id, testr.New(t).WithName("ring").WithValues("replica", id))
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 newScheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{NewInformer: controller.RingInformer(member)},
		NewClient:              log.client(id),
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	w, err := controller.Setup(mgr, controller.Config{PlatformDir: dir, Registerer: reg, NoSync: true, Ring: member})
	if err != nil {
		t.Fatal(err)
	}
	return &replica{id: id, mgr: mgr, member: member, wiring: w, registry: reg, stop: startManager(mgr)}
}

// stable waits until every replica sees all of them live, writes for
// exactly its target, and the targets cover the space once.
func stable(t *testing.T, replicas map[string]*replica) {
	t.Helper()
	waitLong(t, fmt.Sprintf("a stable ring of %d", len(replicas)), func() error {
		var all ring.Set
		for _, r := range replicas {
			s := r.member.Status()
			if s.Members != len(replicas) {
				return fmt.Errorf("%s sees %d members", r.id, s.Members)
			}
			if !s.Writing.Equal(s.Target) || !s.Claim.Equal(s.Target) {
				return fmt.Errorf("%s writes for %v and claims %v, its target is %v", r.id, s.Writing, s.Claim, s.Target)
			}
			if all.Overlaps(s.Writing) {
				return fmt.Errorf("%s's %v overlaps another's", r.id, s.Writing)
			}
			all = all.Union(s.Writing)
		}
		if !all.Equal(ring.Full()) {
			return fmt.Errorf("the replicas write for %v only", all)
		}
		return nil
	})
}

// checkCaches waits until each replica's cache holds only Releases of
// its cover, and all of them together every Release once (a cache lists
// again a moment after its cover changed); then checks that each replica
// knows whether the server filtered, and says so in its metric.
func checkCaches(t *testing.T, replicas map[string]*replica, serverSide bool) {
	t.Helper()
	waitLong(t, "every cache holding its cover", func() error {
		total := 0
		for _, r := range replicas {
			s := r.member.Status()
			cover := s.Target.Union(s.Claim)
			var list v1alpha1.ReleaseList
			if err := r.mgr.GetCache().List(context.Background(), &list); err != nil {
				return err
			}
			for _, rel := range list.Items {
				if h := ring.Hash(string(rel.UID)); !cover.Contains(h) {
					return fmt.Errorf("replica %s caches Release %s (hash %#x) outside its cover %v", r.id, rel.Name, h, cover)
				}
			}
			total += len(list.Items)
		}
		if total != *shardReleases {
			return fmt.Errorf("the replicas' caches hold %d Releases in all, want %d", total, *shardReleases)
		}
		return nil
	})
	want := 0.0
	if serverSide {
		want = 1
	}
	for _, r := range replicas {
		eventually(t, "replica "+r.id+" knows whether the server filters", func() error {
			if s := r.member.Status(); !s.Known {
				return errors.New("not yet")
			}
			return nil
		})
		if s := r.member.Status(); s.ServerSide != serverSide {
			t.Errorf("replica %s: server_side %v, want %v", r.id, s.ServerSide, serverSide)
		}
		if got := gauge(t, r.registry, "leasekit_ring_server_side"); got != want {
			t.Errorf("replica %s: leasekit_ring_server_side %v, want %v", r.id, got, want)
		}
		if got := gauge(t, r.registry, "leasekit_ring_members"); got != float64(len(replicas)) {
			t.Errorf("replica %s: leasekit_ring_members %v, want %d", r.id, got, len(replicas))
		}
	}
}

// gauge returns the value of the single gauge name in reg.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.Metric) == 1 {
			return mf.Metric[0].GetGauge().GetValue()
		}
	}
	t.Fatalf("no gauge %s", name)
	return 0
}

// written waits until n Releases are Rendered against gen, and returns
// how long that took.
func written(t *testing.T, sc *scenario, log *statusWrites, n int, gen int64) time.Duration {
	t.Helper()
	start := time.Now()
	waitLong(t, fmt.Sprintf("%d Releases rendered against generation %d", n, gen), func() error {
		return sc.rendered(n, gen)
	})
	return log.since(gen, start)
}

// statusInput is one Release at one input: its spec's generation and the
// platform generation its status names.
type statusInput struct {
	name     string
	gen, pgn int64
	uid      string
}

// statusWrites records every status write that succeeded, by replica.
type statusWrites struct {
	mu       sync.Mutex
	releases map[statusInput][]string
	at       map[statusInput]time.Time
	platform map[int64][]string
	total    int // writes, Releases' and the Platform's
	marked   int // total at the last mark
}

// client returns the NewClient of replica's manager: status writes that
// succeed are recorded.
func (l *statusWrites) client(replica string) client.NewClientFunc {
	return func(cfg *rest.Config, o client.Options) (client.Client, error) {
		c, err := client.NewWithWatch(cfg, o)
		if err != nil {
			return nil, err
		}
		return interceptor.NewClient(c, interceptor.Funcs{
			SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, obj client.Object, opts ...client.SubResourceUpdateOption) error {
				err := c.SubResource(sub).Update(ctx, obj, opts...)
				if err == nil && sub == "status" {
					l.record(replica, obj)
				}
				return err
			},
		}), nil
	}
}

func (l *statusWrites) record(replica string, obj client.Object) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	l.total++
	switch o := obj.(type) {
	case *v1alpha1.Release:
		k := statusInput{name: o.Name, gen: o.Generation, pgn: o.Status.PlatformGeneration, uid: string(o.UID)}
		l.releases[k] = append(l.releases[k], replica)
		if l.at == nil {
			l.at = map[statusInput]time.Time{}
		}
		l.at[k] = now
	case *v1alpha1.Platform:
		l.platform[o.Generation] = append(l.platform[o.Generation], replica)
	}
}

// since returns how long after start the last write naming platform
// generation gen came.
func (l *statusWrites) since(gen int64, start time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Time
	for k, at := range l.at {
		if k.pgn == gen && at.After(last) {
			last = at
		}
	}
	return last.Sub(start)
}

// lastWrite returns when the last write against gen of a Release whose
// UID hashes into part came.
func (l *statusWrites) lastWrite(part ring.Set, gen int64) time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	var last time.Time
	for k, at := range l.at {
		if k.pgn == gen && part.Contains(ring.Hash(k.uid)) && at.After(last) {
			last = at
		}
	}
	return last
}

// mark records the writes so far, for noWritesSince.
func (l *statusWrites) mark() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.marked = l.total
}

// noWritesSince fails t if any status was written since the last mark,
// in a step that should write nothing.
func (l *statusWrites) noWritesSince(t *testing.T, what string) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := l.total - l.marked; n != 0 {
		t.Errorf("%s: %d status write(s), want none: every status was current", what, n)
	}
}

// duplicates returns a line for each Release input written more than
// once, and each Platform generation written by two replicas.
func (l *statusWrites) duplicates() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for k, who := range l.releases {
		if len(who) > 1 {
			out = append(out, fmt.Sprintf("Release %s at spec generation %d against platform generation %d, by %s", k.name, k.gen, k.pgn, strings.Join(who, ", ")))
		}
	}
	for gen, who := range l.platform {
		w := slices.Compact(slices.Sorted(slices.Values(who)))
		if len(w) > 1 {
			out = append(out, fmt.Sprintf("Platform generation %d's status, by %s", gen, strings.Join(w, ", ")))
		}
	}
	slices.Sort(out)
	return out
}

// renderTime is the renders the replicas observed, and their seconds in
// all (a render's wait for its turn included).
type renderTime struct {
	count uint64
	secs  float64
}

func (r renderTime) minus(o renderTime) renderTime {
	return renderTime{r.count - o.count, r.secs - o.secs}
}

func (r renderTime) String() string {
	if r.count == 0 {
		return "no renders"
	}
	return fmt.Sprintf("%d renders, %.0fms each on average", r.count, 1000*r.secs/float64(r.count))
}

// renders sums the render_seconds histograms of the replicas.
func renders(t *testing.T, replicas map[string]*replica) renderTime {
	t.Helper()
	var out renderTime
	for _, r := range replicas {
		mfs, err := r.registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "leasekit_platform_render_seconds" {
				continue
			}
			for _, m := range mf.Metric {
				out.count += m.GetHistogram().GetSampleCount()
				out.secs += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return out
}
