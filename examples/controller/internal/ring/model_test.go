package ring

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// The model: an API server holding one Lease per member (its claim and a
// resourceVersion), and members that see the Leases through caches that
// lag as they please, run the protocol of the package doc in steps that
// interleave as they please, hold hashes for reconciles, commit writes
// (a write whose Writes() said yes, in flight) and land them. Members
// join, leave (releasing their Lease), crash (leaving it), lose the API
// server and find it again.
//
// Timing is modelled by what may happen, not by clocks: a member cut off
// from the API server goes stale (its Gate's deadline passes, and its
// committed writes have landed: the margin between deadline and expiry)
// before any peer that has seen its latest renewal may judge it expired;
// a peer with an older view may judge it expired at any time (its cache
// lags), and the validating read, which compares resourceVersions,
// catches that.

type modelLease struct {
	claim Set
	rv    int
}

type seen struct {
	claim   Set
	rv      int
	expired bool
}

type flight struct {
	hold      *Hold
	hash      uint64
	committed bool
}

type modelMember struct {
	id          string
	up          bool // the process runs
	cut         bool // it cannot reach the API server
	stale       bool // its Gate's deadline passed
	claim       Set  // published
	gate        Gate
	pendingStop Set
	pendingTake Set
	view        map[string]seen
	flights     []*flight
}

type world struct {
	server  map[string]*modelLease
	members map[string]*modelMember
	used    int
}

var far = time.Now().Add(24 * time.Hour)

func (m *modelMember) deadline() time.Time {
	if m.stale {
		return time.Time{}
	}
	return far
}

// writing returns what m writes for now: nothing once stale or down.
func (m *modelMember) writing() Set {
	if !m.up || m.stale {
		return nil
	}
	w, _ := m.gate.Writing()
	return w
}

// plan runs Plan on m's view.
func (m *modelMember) plan() (target, stop, take Set) {
	var live []string
	var peers []Peer
	for id, s := range m.view {
		if id == m.id || s.expired {
			continue
		}
		live = append(live, id)
		peers = append(peers, Peer{ID: id, Claim: s.claim})
	}
	w, _ := m.gate.Writing()
	return Plan(m.id, live, m.claim, w, peers)
}

func (w *world) publish(m *modelMember, claim Set) {
	m.claim = claim
	l := w.server[m.id]
	l.claim, l.rv = claim, l.rv+1
	m.view[m.id] = seen{claim: claim, rv: l.rv}
}

func (w *world) refresh(obs *modelMember, id string) {
	l, ok := w.server[id]
	if !ok {
		delete(obs.view, id)
		return
	}
	s := obs.view[id]
	if s.rv != l.rv {
		s = seen{claim: l.claim, rv: l.rv}
	}
	obs.view[id] = s
}

func (w *world) pick(t *rapid.T, label string, ok func(*modelMember) bool) *modelMember {
	var ids []string
	for _, id := range slices.Sorted(maps.Keys(w.members)) {
		if ok(w.members[id]) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	return w.members[rapid.SampledFrom(ids).Draw(t, label)]
}

func active(m *modelMember) bool { return m.up && !m.cut && !m.stale }

// land lands m's committed write on h, failing t if another member writes
// for h now.
func (w *world) land(t *rapid.T, m *modelMember, f *flight) {
	for _, o := range w.members {
		if o != m && o.writing().Contains(f.hash) {
			t.Fatalf("%s's write for %#x landed while %s writes for it (%v)", m.id, f.hash, o.id, o.writing())
		}
	}
	f.hold.Done()
}

// dropFlights lands m's committed writes and drops its other holds.
func (w *world) dropFlights(t *rapid.T, m *modelMember) {
	for _, f := range m.flights {
		if f.committed {
			w.land(t, m, f)
		}
		f.hold.Done()
	}
	m.flights = nil
}

func (w *world) stopPhase(m *modelMember) {
	target, stop, _ := m.plan()
	wr, _ := m.gate.Writing()
	m.gate.Set(target, wr.Minus(stop), m.deadline())
	m.pendingStop = m.pendingStop.Union(stop)
}

func (w *world) publishStop(m *modelMember) bool {
	if m.pendingStop.Empty() {
		return false
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if m.gate.Drain(ctx, m.pendingStop) != nil {
		return false
	}
	w.publish(m, m.claim.Minus(m.pendingStop))
	m.pendingStop = nil
	return true
}

func (w *world) takePublish(m *modelMember) bool {
	_, _, take := m.plan()
	if take.Empty() || !m.pendingTake.Empty() {
		return false
	}
	w.publish(m, m.claim.Union(take))
	m.pendingTake = take
	return true
}

func (w *world) takeValidate(m *modelMember) bool {
	if m.pendingTake.Empty() {
		return false
	}
	var peers []Peer
	for id, l := range w.server {
		if id == m.id {
			continue
		}
		if s, ok := m.view[id]; ok && s.expired && s.rv == l.rv {
			continue
		}
		peers = append(peers, Peer{ID: id, Claim: l.claim})
	}
	valid := Validate(m.pendingTake, peers)
	if lost := m.pendingTake.Minus(valid); !lost.Empty() {
		w.publish(m, m.claim.Minus(lost))
	}
	wr, target := m.gate.Writing()
	m.gate.Set(target, wr.Union(valid), m.deadline())
	m.pendingTake = nil
	return true
}

func (w *world) check(t *rapid.T) {
	var ids []string
	for id, m := range w.members {
		if m.up {
			ids = append(ids, id)
		}
		// What a member writes for it has published.
		if wr := m.writing(); !wr.Minus(w.server[id].claim).Empty() {
			t.Fatalf("%s writes for %v outside its published claim %v", id, wr, w.server[id].claim)
		}
		for _, o := range w.members {
			if o != m && m.writing().Overlaps(o.writing()) {
				t.Fatalf("%s and %s both write for %v", m.id, o.id, m.writing().Intersect(o.writing()))
			}
		}
		for _, f := range m.flights {
			if !f.committed {
				continue
			}
			for _, o := range w.members {
				if o != m && o.writing().Contains(f.hash) {
					t.Fatalf("%s writes for %#x while %s's write for it is in flight", o.id, f.hash, m.id)
				}
			}
		}
	}
	if len(ids) > 0 {
		checkPartition(t, Targets(ids))
	}
}

// TestRingModel drives members through any sequence of joins, leaves,
// crashes, cuts from the API server and their ends, expiries, renewals,
// stale views and protocol steps, checking after each step that no two
// members write for one hash, that a write in flight is never met by
// another member's right to write, and that the targets of the members
// up cover the space exactly once; then it lets the ring settle and
// checks that every member up writes for exactly its target.
func TestRingModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := &world{server: map[string]*modelLease{}, members: map[string]*modelMember{}}
		hashes := rapid.SampledFrom([]uint64{0, 1 << 62, 1<<63 - 1, 1 << 63, 3 << 62, ^uint64(0), 0x5555555555555555, 0xaaaaaaaaaaaaaaab})
		join := func() {
			w.used++
			id := fmt.Sprintf("m%d", w.used)
			m := &modelMember{id: id, up: true, view: map[string]seen{}}
			w.server[id] = &modelLease{rv: 1}
			w.members[id] = m
			for other := range w.server {
				w.refresh(m, other)
			}
		}
		for range rapid.IntRange(1, 3).Draw(t, "founders") {
			join()
		}
		actions := map[string]func(*rapid.T){
			"join": func(t *rapid.T) {
				up := 0
				for _, m := range w.members {
					if m.up {
						up++
					}
				}
				if up >= 4 {
					return
				}
				join()
			},
			"leave": func(t *rapid.T) {
				m := w.pick(t, "leaver", active)
				if m == nil {
					return
				}
				wr, target := m.gate.Writing()
				m.gate.Set(target, nil, m.deadline())
				_ = wr
				w.dropFlights(t, m)
				delete(w.server, m.id)
				delete(w.members, m.id)
			},
			"crash": func(t *rapid.T) {
				m := w.pick(t, "crasher", func(m *modelMember) bool { return m.up })
				if m == nil {
					return
				}
				w.dropFlights(t, m)
				m.up = false
			},
			"cut": func(t *rapid.T) {
				m := w.pick(t, "cut", active)
				if m == nil {
					return
				}
				m.cut = true
			},
			"goStale": func(t *rapid.T) {
				m := w.pick(t, "stale", func(m *modelMember) bool { return m.up && m.cut && !m.stale })
				if m == nil {
					return
				}
				// The margin: its committed writes land before any peer
				// may judge it expired.
				for _, f := range m.flights {
					if f.committed {
						w.land(t, m, f)
						f.committed = false
					}
				}
				m.stale = true
				wr, target := m.gate.Writing()
				m.gate.Set(target, wr, m.deadline())
			},
			"heal": func(t *rapid.T) {
				m := w.pick(t, "healed", func(m *modelMember) bool { return m.up && m.cut })
				if m == nil {
					return
				}
				m.cut = false
				if m.stale {
					// Its renewal completes past its deadline: it lost its
					// hold and starts again from nothing.
					m.stale = false
					m.pendingStop, m.pendingTake = nil, nil
					_, target := m.gate.Writing()
					m.gate.Set(target, nil, m.deadline())
					w.publish(m, nil)
				}
			},
			"renew": func(t *rapid.T) {
				m := w.pick(t, "renewer", active)
				if m == nil {
					return
				}
				w.publish(m, m.claim)
			},
			"refresh": func(t *rapid.T) {
				m := w.pick(t, "observer", func(m *modelMember) bool { return m.up })
				if m == nil {
					return
				}
				ids := slices.Sorted(maps.Keys(w.server))
				for id := range m.view {
					if _, ok := w.server[id]; !ok {
						ids = append(ids, id) // gone: seen gone
					}
				}
				w.refresh(m, rapid.SampledFrom(ids).Draw(t, "seen"))
			},
			"judgeExpired": func(t *rapid.T) {
				obs := w.pick(t, "judge", func(m *modelMember) bool { return m.up })
				if obs == nil {
					return
				}
				var ids []string
				for id, s := range obs.view {
					l, ok := w.server[id]
					x := w.members[id]
					if id == obs.id || s.expired {
						continue
					}
					// A view older than the Lease may judge it expired any
					// time; a view of its latest renewal only once its
					// holder stopped writing (crashed, or stale).
					if !ok || s.rv != l.rv || x == nil || !x.up || x.stale {
						ids = append(ids, id)
					}
				}
				if len(ids) == 0 {
					return
				}
				slices.Sort(ids)
				id := rapid.SampledFrom(ids).Draw(t, "expired")
				s := obs.view[id]
				s.expired = true
				obs.view[id] = s
			},
			"round": func(t *rapid.T) {
				// One whole round of the protocol, as the member runs it
				// when its writes in flight are done quickly.
				if m := w.pick(t, "member", active); m != nil {
					w.stopPhase(m)
					w.publishStop(m)
					w.takePublish(m)
					w.takeValidate(m)
				}
			},
			"refreshAll": func(t *rapid.T) {
				m := w.pick(t, "observer", func(m *modelMember) bool { return m.up })
				if m == nil {
					return
				}
				for _, id := range slices.Collect(maps.Keys(m.view)) {
					w.refresh(m, id)
				}
				for id := range w.server {
					w.refresh(m, id)
				}
			},
			"stop": func(t *rapid.T) {
				if m := w.pick(t, "stopper", active); m != nil {
					w.stopPhase(m)
				}
			},
			"publishStop": func(t *rapid.T) {
				if m := w.pick(t, "stopper", active); m != nil {
					w.publishStop(m)
				}
			},
			"takePublish": func(t *rapid.T) {
				if m := w.pick(t, "taker", active); m != nil {
					w.takePublish(m)
				}
			},
			"takeValidate": func(t *rapid.T) {
				if m := w.pick(t, "taker", active); m != nil {
					w.takeValidate(m)
				}
			},
			"hold": func(t *rapid.T) {
				m := w.pick(t, "holder", func(m *modelMember) bool { return m.up })
				if m == nil {
					return
				}
				h := hashes.Draw(t, "hash")
				m.flights = append(m.flights, &flight{hold: m.gate.Hold(h), hash: h})
			},
			"holdAndCommit": func(t *rapid.T) {
				// A hold on a hash the member writes for, its write begun.
				m := w.pick(t, "writer", func(m *modelMember) bool { return m.up && !m.writing().Empty() })
				if m == nil {
					return
				}
				wr := m.writing()
				sp := wr[rapid.IntRange(0, len(wr)-1).Draw(t, "span")]
				h := rapid.SampledFrom([]uint64{sp.Lo, sp.Hi}).Draw(t, "hash")
				f := &flight{hold: m.gate.Hold(h), hash: h}
				m.flights = append(m.flights, f)
				f.committed = f.hold.Writes()
			},
			"commit": func(t *rapid.T) {
				m := w.pick(t, "writer", func(m *modelMember) bool { return m.up && len(m.flights) > 0 })
				if m == nil {
					return
				}
				i := rapid.IntRange(0, len(m.flights)-1).Draw(t, "flight")
				f := m.flights[i]
				if f.committed {
					return
				}
				if !f.hold.Writes() {
					f.hold.Done()
					m.flights = slices.Delete(m.flights, i, i+1)
					return
				}
				f.committed = true
			},
			"land": func(t *rapid.T) {
				m := w.pick(t, "writer", func(m *modelMember) bool { return m.up && len(m.flights) > 0 })
				if m == nil {
					return
				}
				i := rapid.IntRange(0, len(m.flights)-1).Draw(t, "flight")
				f := m.flights[i]
				if f.committed {
					w.land(t, m, f)
				}
				f.hold.Done()
				m.flights = slices.Delete(m.flights, i, i+1)
			},
			"": func(t *rapid.T) { w.check(t) },
		}
		// Four times rapid's steps: a handover takes a dozen.
		for range 4 {
			t.Repeat(actions)
		}
		w.settle(t)
	})
}

// settle ends every cut, lets every member see every Lease and judge the
// crashed expired, ends every hold, and runs the protocol until nothing
// changes; then every member up writes for exactly its target, and the
// targets cover the space once.
func (w *world) settle(t *rapid.T) {
	for _, m := range w.members {
		if m.up && m.cut {
			m.cut = false
			if m.stale {
				m.stale = false
				m.pendingStop, m.pendingTake = nil, nil
				_, target := m.gate.Writing()
				m.gate.Set(target, nil, m.deadline())
				w.publish(m, nil)
			}
		}
	}
	for _, m := range w.members {
		if m.up {
			w.dropFlights(t, m)
		}
	}
	ids := slices.Sorted(maps.Keys(w.members))
	for round := 0; ; round++ {
		if round > 20 {
			t.Fatalf("the ring did not settle in 20 rounds")
		}
		changed := false
		for _, id := range ids {
			m := w.members[id]
			if !m.up {
				continue
			}
			for _, other := range slices.Collect(maps.Keys(m.view)) {
				w.refresh(m, other)
			}
			for other := range w.server {
				w.refresh(m, other)
			}
			for _, oid := range ids {
				if x := w.members[oid]; !x.up {
					s := m.view[oid]
					s.expired = true
					m.view[oid] = s
				}
			}
			before, _ := m.gate.Writing()
			w.stopPhase(m)
			changed = w.publishStop(m) || changed
			changed = w.takePublish(m) || changed
			changed = w.takeValidate(m) || changed
			after, _ := m.gate.Writing()
			changed = changed || !before.Equal(after)
			w.check(t)
		}
		if !changed {
			break
		}
	}
	var up []string
	for _, id := range ids {
		if w.members[id].up {
			up = append(up, id)
		}
	}
	claims := map[string]Set{}
	for _, id := range up {
		claims[id] = w.server[id].claim
	}
	targets := Assign(up, claims)
	for _, id := range up {
		if got := w.members[id].writing(); !got.Equal(targets[id]) {
			t.Fatalf("settled: %s writes for %v, its target is %v", id, got, targets[id])
		}
	}
}

// TestHandoverWaitsForWritesInFlight: the model's scenario of a write in
// flight when its hash moves to a joining member; the old owner's smaller
// claim is published only once the write has landed.
func TestHandoverWaitsForWritesInFlight(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := &world{server: map[string]*modelLease{}, members: map[string]*modelMember{}}
		join := func(id string) *modelMember {
			m := &modelMember{id: id, up: true, view: map[string]seen{}}
			w.server[id] = &modelLease{rv: 1}
			w.members[id] = m
			for other := range w.server {
				w.refresh(m, other)
			}
			return m
		}
		round := func(m *modelMember) {
			for id := range w.server {
				w.refresh(m, id)
			}
			w.stopPhase(m)
			w.publishStop(m)
			w.takePublish(m)
			w.takeValidate(m)
			w.check(t)
		}
		a := join("a")
		round(a)
		const h = ^uint64(0)
		f := &flight{hold: a.gate.Hold(h), hash: h}
		a.flights = append(a.flights, f)
		if !f.hold.Writes() {
			t.Fatalf("a does not write for %#x: %v", h, a.writing())
		}
		f.committed = true
		b := join("b")
		round(a) // a stops writing for b's half; its claim stays
		round(b) // b cannot take it
		if b.writing().Contains(h) {
			t.Fatalf("b writes for %#x while a's write is in flight", h)
		}
		w.land(t, a, f)
		a.flights = nil
		round(a) // a publishes its smaller claim
		round(b) // b takes its half
		if !b.writing().Contains(h) {
			t.Fatalf("b does not write for %#x once a's write landed: %v", h, b.writing())
		}
	})
}
