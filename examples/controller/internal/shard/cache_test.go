package shard

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"

	"leasekit.dev/examples/controller/internal/ring"
)

// lists answers each list with the next of its lists.
type lists struct{ next []*corev1.ConfigMapList }

func (l *lists) ListWithContext(context.Context, metav1.ListOptions) (runtime.Object, error) {
	if len(l.next) == 0 {
		return &corev1.ConfigMapList{}, nil
	}
	out := l.next[0]
	l.next = l.next[1:]
	return out, nil
}

func (l *lists) WatchWithContext(context.Context, metav1.ListOptions) (watch.Interface, error) {
	return watch.NewEmptyWatch(), nil
}

// uidIn returns a UID whose hash is in s.
func uidIn(t *testing.T, s ring.Set) types.UID {
	for i := range 1000 {
		if uid := fmt.Sprintf("%d-uid", i); s.Contains(ring.Hash(uid)) {
			return types.UID(uid)
		}
	}
	t.Fatalf("no UID found in %v", s)
	return ""
}

func listOf(uids ...types.UID) *corev1.ConfigMapList {
	l := &corev1.ConfigMapList{}
	for _, uid := range uids {
		l.Items = append(l.Items, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: string(uid), UID: uid}})
	}
	return l
}

// TestProbe: the probe judges the server to honour the selector only when
// each half's list held an object inside it, to ignore it when a list
// held one outside, and leaves it unknown otherwise: an object created
// between the two lists, inside the second half, on a server that
// ignores the selector, does not pass for one that honours it.
func TestProbe(t *testing.T) {
	low, high := ring.Set{{Lo: 0, Hi: 1<<63 - 1}}, ring.Set{{Lo: 1 << 63, Hi: ^uint64(0)}}
	a, b := uidIn(t, low), uidIn(t, high)
	for _, c := range []struct {
		name        string
		answers     []*corev1.ConfigMapList
		known, pass bool
	}{
		{"each half its own object", []*corev1.ConfigMapList{listOf(a), listOf(b)}, true, true},
		{"the same first object twice", []*corev1.ConfigMapList{listOf(a), listOf(a)}, true, false},
		{"an object outside the first half", []*corev1.ConfigMapList{listOf(b), listOf(b)}, true, false},
		{"nothing, then an object created meanwhile", []*corev1.ConfigMapList{listOf(), listOf(b)}, false, false},
		{"nothing at all", nil, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, err := New(Config{Ring: "r", Namespace: "ns", Identity: "a", LeaseDuration: 3 * time.Second, RenewPeriod: time.Second,
				Client: fake.NewClientset(), Logger: logr.Discard()})
			if err != nil {
				t.Fatal(err)
			}
			s := &sharded{m: m, lw: &lists{next: c.answers}, watches: map[*filtered]struct{}{}}
			s.probe(context.Background())
			m.mu.Lock()
			known, honoured := m.serverSet, m.server
			m.mu.Unlock()
			if known != c.known || honoured != c.pass {
				t.Errorf("known %v, honoured %v; want known %v, honoured %v", known, honoured, c.known, c.pass)
			}
		})
	}
}

// TestSelectorWithinTheServersLimit: a cover the API server would refuse
// as a selector is sent with none (the client's filter narrows it), and
// any other with its own.
func TestSelectorWithinTheServersLimit(t *testing.T) {
	spans := func(n int) ring.Set {
		s := make(ring.Set, n)
		for i := range s {
			s[i] = ring.Span{Lo: uint64(i) << 50, Hi: uint64(i)<<50 + 1<<49}
		}
		return s
	}
	for _, n := range []int{1, ring.MaxSelectorRanges} {
		if got, want := selector(spans(n)), spans(n).Selector(); got != want {
			t.Errorf("%d ranges: selector %.80q…, want %.80q…", n, got, want)
		}
	}
	if got := selector(spans(ring.MaxSelectorRanges + 1)); got != "" {
		t.Errorf("%d ranges: selector %.80q…, want none", ring.MaxSelectorRanges+1, got)
	}
}
