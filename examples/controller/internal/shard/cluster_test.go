package shard_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"leasekit.dev/examples/controller/internal/ring"
	"leasekit.dev/examples/controller/internal/shard"
)

const (
	testRing  = "platform"
	testNS    = "ring"
	testLease = 6 * time.Second
	testRenew = 2 * time.Second
)

var leasesGVR = schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}

// cluster is an API server of Leases on client-go's fake clientset, with
// what the fake lacks: a resourceVersion on every object, bumped on each
// write, and updates and preconditioned deletes that carry an old one
// refused with a conflict. fault, when set, may refuse any request.
type cluster struct {
	cs *fake.Clientset

	mu     sync.Mutex
	rv     int
	fault  func(verb, name string) error
	writes []coordinationv1.Lease // every Lease written, in order
}

func newCluster() *cluster {
	c := &cluster{cs: fake.NewClientset()}
	tr := c.cs.Tracker()
	c.cs.PrependReactor("*", "leases", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		name := ""
		switch a := a.(type) {
		case k8stesting.GetAction: // a delete too: the same methods
			name = a.GetName()
		case k8stesting.CreateAction: // an update too
			name = a.GetObject().(*coordinationv1.Lease).Name
		}
		if c.fault != nil {
			if err := c.fault(a.GetVerb(), name); err != nil {
				return true, nil, err
			}
		}
		ns := a.GetNamespace()
		switch a := a.(type) {
		case k8stesting.CreateAction:
			if a.GetVerb() == "update" {
				break
			}
			l := a.GetObject().(*coordinationv1.Lease).DeepCopy()
			if _, err := tr.Get(leasesGVR, ns, l.Name); err == nil {
				return true, nil, apierrors.NewAlreadyExists(leasesGVR.GroupResource(), l.Name)
			}
			return c.stamp(l, func() error { return tr.Create(leasesGVR, l, ns) })
		}
		switch a := a.(type) {
		case k8stesting.UpdateAction:
			l := a.GetObject().(*coordinationv1.Lease).DeepCopy()
			old, err := tr.Get(leasesGVR, ns, l.Name)
			if err != nil {
				return true, nil, err
			}
			if l.ResourceVersion != old.(*coordinationv1.Lease).ResourceVersion {
				return true, nil, apierrors.NewConflict(leasesGVR.GroupResource(), l.Name, fmt.Errorf("resourceVersion %s, the object has %s", l.ResourceVersion, old.(*coordinationv1.Lease).ResourceVersion))
			}
			return c.stamp(l, func() error { return tr.Update(leasesGVR, l, ns) })
		case k8stesting.DeleteAction:
			old, err := tr.Get(leasesGVR, ns, a.GetName())
			if err != nil {
				return true, nil, err
			}
			if p := a.GetDeleteOptions().Preconditions; p != nil && p.ResourceVersion != nil && *p.ResourceVersion != old.(*coordinationv1.Lease).ResourceVersion {
				return true, nil, apierrors.NewConflict(leasesGVR.GroupResource(), a.GetName(), fmt.Errorf("precondition resourceVersion %s, the object has %s", *p.ResourceVersion, old.(*coordinationv1.Lease).ResourceVersion))
			}
			return true, nil, tr.Delete(leasesGVR, ns, a.GetName())
		}
		return false, nil, nil
	})
	c.cs.PrependWatchReactor("leases", func(a k8stesting.Action) (bool, watch.Interface, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.fault != nil {
			if err := c.fault("watch", ""); err != nil {
				return true, nil, err
			}
		}
		return false, nil, nil
	})
	return c
}

// stamp gives l the next resourceVersion and stores it with put,
// recording the write; c.mu is held.
func (c *cluster) stamp(l *coordinationv1.Lease, put func() error) (bool, runtime.Object, error) {
	c.rv++
	l.ResourceVersion = strconv.Itoa(c.rv)
	if err := put(); err != nil {
		return true, nil, err
	}
	c.writes = append(c.writes, *l.DeepCopy())
	return true, l, nil
}

// setFault sets the function that may refuse a request.
func (c *cluster) setFault(f func(verb, name string) error) {
	c.mu.Lock()
	c.fault = f
	c.mu.Unlock()
}

// writesOf returns the writes of the Lease name so far.
func (c *cluster) writesOf(name string) []coordinationv1.Lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []coordinationv1.Lease
	for _, l := range c.writes {
		if l.Name == name {
			out = append(out, l)
		}
	}
	return out
}

// handMade creates a Lease in the ring as a person with kubectl would.
func (c *cluster) handMade(t *testing.T, name, holder, claim string, seconds int32) {
	t.Helper()
	now := metav1.NewMicroTime(time.Now())
	l := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: testNS,
			Labels:      map[string]string{shard.RingLabel: testRing},
			Annotations: map[string]string{shard.ClaimAnnotation: claim},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(seconds),
			AcquireTime: &now, RenewTime: &now,
		},
	}
	if _, err := c.cs.CoordinationV1().Leases(testNS).Create(context.Background(), l, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// logs collects a logger's lines.
type logs struct {
	mu    sync.Mutex
	lines []string
}

func (l *logs) logger(t *testing.T, name string) logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		l.lines = append(l.lines, name+" "+args)
		l.mu.Unlock()
	}, funcr.Options{Verbosity: 1})
}

// with returns the lines holding every one of words.
func (l *logs) with(words ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
next:
	for _, line := range l.lines {
		for _, w := range words {
			if !strings.Contains(line, w) {
				continue next
			}
		}
		out = append(out, line)
	}
	return out
}

// running is a member started on a cluster.
type running struct {
	id   string
	m    *shard.Member
	stop context.CancelFunc
	done chan struct{} // closed once Start returned err
	err  error
}

func start(t *testing.T, c *cluster, lg *logs, id string) *running {
	t.Helper()
	m, err := shard.New(shard.Config{
		Ring: testRing, Namespace: testNS, Identity: id,
		LeaseDuration: testLease, RenewPeriod: testRenew,
		Client: c.cs, Logger: lg.logger(t, id),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{id: id, m: m, stop: cancel, done: make(chan struct{})}
	go func() {
		r.err = m.Start(ctx)
		close(r.done)
	}()
	t.Cleanup(func() { _ = r.end() })
	return r
}

// end stops r and returns what Start returned.
func (r *running) end() error {
	r.stop()
	<-r.done
	return r.err
}

// watchWriters samples, every 10ms of the bubble's time for d, what each
// member writes for, and fails t at the first hash two of them write for.
func watchWriters(t *testing.T, d time.Duration, members ...*running) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		checkWriters(t, members...)
	}
}

func checkWriters(t *testing.T, members ...*running) {
	t.Helper()
	for i, a := range members {
		for _, b := range members[i+1:] {
			wa, wb := a.m.Status().Writing, b.m.Status().Writing
			if wa.Overlaps(wb) {
				t.Fatalf("%s and %s both write for %v", a.id, b.id, wa.Intersect(wb))
			}
		}
	}
}

// covered waits up to d for the members to write, together, for the
// whole space, each for a part of it, and returns how long that took; it
// fails t if they do not.
func covered(t *testing.T, d time.Duration, members ...*running) time.Duration {
	t.Helper()
	begun := time.Now()
	for time.Since(begun) <= d {
		var all ring.Set
		each := true
		for _, r := range members {
			w := r.m.Status().Writing
			all, each = all.Union(w), each && !w.Empty()
		}
		if each && all.Equal(ring.Full()) {
			return time.Since(begun)
		}
		checkWriters(t, members...)
		time.Sleep(10 * time.Millisecond)
	}
	var parts []string
	for _, r := range members {
		parts = append(parts, fmt.Sprintf("%s writes for %v", r.id, r.m.Status().Writing))
	}
	t.Fatalf("after %v the members do not write for the whole space: %s", d, strings.Join(parts, "; "))
	return 0
}
