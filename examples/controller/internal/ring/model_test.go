package ring

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
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
// The operator's hands and the API server's faults too: a Lease deleted by
// hand (its holder keeps writing until it finds out, so a view counts the
// Lease it saw gone until its holder stopped); a second incarnation of one
// identity (it takes the Lease over only once the first stopped writing,
// or at once when the Lease claims nothing); a hand-made Lease with a
// forged claim (or one that does not parse: everything) and a huge
// duration (a member honours its own); renewals that fail before or
// after they applied (429, 500, a timeout) or meet a conflict (a hand
// edit), and validating lists that fail.
//
// Timing is modelled by what may happen, not by clocks: a member cut off
// from the API server goes stale (its Gate's deadline passes, and its
// committed writes have landed: the margin between deadline and expiry)
// before any peer that has seen its latest renewal may judge it expired;
// a peer with an older view may judge it expired at any time (its cache
// lags), and the validating read, which compares resourceVersions,
// catches that.

type modelLease struct {
	claim  Set
	rv     int
	holder string // the key of the member holding it; "" for a hand-made Lease
	member bool   // of a member's shape: its name counts among the live
	huge   bool   // it announces a huge lease duration
}

type seen struct {
	claim   Set
	rv      int
	expired bool
	deleted bool // seen gone, its claim counted until judged expired
	member  bool
	holder  string
}

// The fixes of the ring's handling of hand edits, each on in the model;
// turned off one at a time, the model finds the defect each fixes.
var (
	fixDeletedCounts  = true // a Lease seen gone counts until its holder stopped
	fixIncarnation    = true // a second incarnation waits for the first to stop
	fixBoundedLease   = true // a huge announced duration is honoured as one's own
	fixForeignIgnored = true // a hand-made Lease not of the ring's shape is never a member
)

type flight struct {
	hold      *Hold
	hash      uint64
	committed bool
}

type modelMember struct {
	id          string // its identity: its Lease's name
	key         string // its incarnation: id#n
	fresh       bool   // it has never held its Lease
	young       bool   // it has watched the ring for less than a lease duration: it takes nothing
	holds       bool   // it believes it holds its Lease
	up          bool   // the process runs
	cut         bool   // it cannot reach the API server
	stale       bool   // its Gate's deadline passed
	claim       Set    // published
	gate        Gate
	pendingStop Set
	pendingTake Set
	view        map[string]seen
	flights     []*flight
}

type world struct {
	server  map[string]*modelLease
	members map[string]*modelMember // by key
	gone    map[string]string       // a Lease deleted: the key of its last holder
	goneRV  map[string]int          // and its last resourceVersion
	used    int
	rv      int
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
		if s.member || !fixForeignIgnored {
			live = append(live, id)
		}
		peers = append(peers, Peer{ID: id, Claim: s.claim})
	}
	w, _ := m.gate.Writing()
	return Plan(m.id, live, m.claim, w, peers)
}

// publish writes m's Lease with claim, and reports whether it could: a
// Lease deleted or held by another incarnation refuses it, and m stops
// writing for everything and no longer holds it.
func (w *world) publish(m *modelMember, claim Set) bool {
	l, ok := w.server[m.id]
	if !ok || l.holder != m.key || !m.holds {
		w.lost(m)
		return false
	}
	m.claim = claim
	w.rv++
	l.claim, l.rv = claim, w.rv
	m.view[m.id] = seen{claim: claim, rv: l.rv, member: true, holder: m.key}
	return true
}

// lost: m found it no longer holds its Lease.
func (w *world) lost(m *modelMember) {
	_, target := m.gate.Writing()
	m.gate.Set(target, nil, m.deadline())
	m.holds, m.claim = false, nil
	m.pendingStop, m.pendingTake = nil, nil
}

// stopped reports whether the member key (a Lease's holder) writes no
// more for what its Lease claims as last seen: it is gone, down or stale
// (a lease duration since its last renewal passed), or it found it no
// longer holds its Lease and stopped.
func (w *world) stopped(key string) bool {
	x := w.members[key]
	if x == nil || !x.up || x.stale {
		return true
	}
	if x.holds || !x.writing().Empty() {
		return false
	}
	for _, f := range x.flights {
		if f.committed {
			return false
		}
	}
	return true // it found its Lease gone or taken over, and stopped
}

// acquire has m create its Lease, or take it over from another
// incarnation, and reports whether it did; only once its own writes in
// flight have landed.
func (w *world) acquire(m *modelMember) bool {
	if m.holds || !m.up || m.cut || m.stale {
		return false
	}
	for _, f := range m.flights {
		if f.committed {
			return false
		}
	}
	l, ok := w.server[m.id]
	if ok && l.holder != m.key {
		quick := m.fresh && l.claim.Empty()
		if fixIncarnation && !quick && !w.stopped(l.holder) {
			return false // it waits for that Lease to expire
		}
	}
	if !ok && fixIncarnation {
		// The Lease it waited for is gone, or its own was deleted and
		// another incarnation may have held it since: that holder writes
		// on until it finds out, for what its unseen last versions claim
		// (anything), which counts as a Lease seen gone until it stopped.
		s, had := m.view[m.id]
		for _, holder := range []string{s.holder, w.gone[m.id]} {
			if (holder == s.holder && !had) || holder == "" || holder == m.key {
				continue
			}
			ghost := m.id + "~" + holder
			m.view[ghost] = seen{claim: Full(), rv: s.rv, deleted: true}
			w.gone[ghost] = holder
		}
	}
	w.rv++
	w.server[m.id] = &modelLease{rv: w.rv, holder: m.key, member: true}
	if holder, ok := w.gone[m.id]; ok && !w.released(m.id, holder) {
		// The name is taken again while the holder of the Lease deleted
		// under it may still write for what that Lease claimed: the
		// deletion stays on record under a name of its own, for a
		// newcomer that never saw it waits until that holder stopped.
		ghost := m.id + "~" + holder
		w.gone[ghost], w.goneRV[ghost] = holder, w.goneRV[m.id]
	}
	delete(w.gone, m.id)
	m.holds, m.fresh, m.claim = true, false, nil
	m.view[m.id] = seen{rv: w.rv, member: true, holder: m.key}
	return true
}

func (w *world) refresh(obs *modelMember, id string) {
	l, ok := w.server[id]
	if !ok {
		s, had := obs.view[id]
		final := s.rv == w.goneRV[id] // its last version seen
		switch {
		case !had:
		case !fixDeletedCounts || s.expired && (s.deleted || final) || !s.deleted && final && s.claim.Empty():
			delete(obs.view, id)
		case !s.deleted:
			if !final {
				// Found gone by a list: what its unseen versions claimed
				// is unknown, even where the version seen claimed nothing
				// or was judged expired.
				s.claim, s.expired = Full(), false
			}
			s.deleted = true
			obs.view[id] = s
		}
		return
	}
	s, had := obs.view[id]
	if had && fixDeletedCounts && id != obs.id && s.holder != l.holder && !s.claim.Empty() && !s.expired {
		// Another incarnation holds it now: the earlier one's claim
		// counts, as a Lease seen gone, until that one stopped.
		ghost := id + "~" + s.holder
		obs.view[ghost] = seen{claim: s.claim, rv: s.rv, deleted: true}
		w.gone[ghost] = s.holder
	}
	if s.rv != l.rv {
		s = seen{claim: l.claim, rv: l.rv, member: l.member, holder: l.holder}
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

func isUp(m *modelMember) bool { return m.up }

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
	if w.publish(m, m.claim.Minus(m.pendingStop)) {
		m.pendingStop = nil
	}
	return true
}

func (w *world) takePublish(m *modelMember) bool {
	_, _, take := m.plan()
	if take.Empty() || !m.pendingTake.Empty() || !m.holds || m.young {
		return false
	}
	if w.publish(m, m.claim.Union(take)) {
		m.pendingTake = take
	}
	return true
}

func (w *world) takeValidate(m *modelMember) bool {
	if m.pendingTake.Empty() {
		return false
	}
	// The read must hold this member's Lease as it published it: deleted
	// or taken over since, it writes for nothing new.
	if l, ok := w.server[m.id]; !ok || l.holder != m.key || !m.pendingTake.Minus(l.claim).Empty() {
		m.pendingTake = nil
		return true
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
	for id, s := range m.view {
		if _, listed := w.server[id]; listed || id == m.id {
			continue
		}
		switch {
		case !s.deleted:
			// Deleted, not yet seen deleted: a version unseen (even after
			// one judged expired) may claim anything.
			peers = append(peers, Peer{ID: id, Claim: Full()})
		case !s.expired:
			peers = append(peers, Peer{ID: id, Claim: s.claim}) // seen, deleted since
		}
	}
	valid := Validate(m.pendingTake, peers)
	if lost := m.pendingTake.Minus(valid); !lost.Empty() {
		if !w.publish(m, m.claim.Minus(lost)) {
			return true
		}
	}
	wr, target := m.gate.Writing()
	m.gate.Set(target, wr.Union(valid), m.deadline())
	m.pendingTake = nil
	return true
}

func (w *world) check(t *rapid.T) {
	var ids []string
	for key, m := range w.members {
		if m.up && m.holds {
			ids = append(ids, m.id)
		}
		// What a member writes for it has published: in the Lease it
		// holds; or, its Lease deleted or taken over, in its last claim
		// (which the views count until it stopped).
		wr := m.writing()
		if l, ok := w.server[m.id]; ok && l.holder == key && !wr.Minus(l.claim).Empty() {
			t.Fatalf("%s writes for %v outside its published claim %v", key, wr, l.claim)
		} else if !wr.Minus(m.claim).Empty() {
			t.Fatalf("%s writes for %v outside its last claim %v", key, wr, m.claim)
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

// judgeable reports whether obs may judge the Lease id expired as it
// sees it: a view older than the Lease at any time (the validating read
// sees the newer version); a view of its latest version, or of it gone,
// once its holder stopped writing; a hand-made Lease at any time, unless
// it announces a huge duration and the member honours it.
func (w *world) judgeable(s seen, id string) bool {
	l, ok := w.server[id]
	if ok && s.rv != l.rv {
		return true
	}
	if ok {
		if l.holder == "" {
			return !l.huge || fixBoundedLease
		}
		return w.stopped(l.holder)
	}
	return w.released(id, w.gone[id])
}

// released reports whether holder, the last holder of the deleted Lease
// name (or of the earlier incarnation's claim a ghost name stands for),
// writes no more for what that Lease claimed: it stopped, or it holds
// the Lease of that identity again, which it could only take once it
// had found it lost, stopped writing and landed its writes in flight.
func (w *world) released(name, holder string) bool {
	if holder == "" || w.stopped(holder) {
		return true
	}
	id, _, _ := strings.Cut(name, "~")
	l, back := w.server[id]
	return back && l.holder == holder
}

// TestRingModel drives members through any sequence of joins, leaves,
// crashes, cuts from the API server and their ends, expiries, renewals,
// stale views and protocol steps, and of the operator's hands and the API
// server's faults: Leases deleted by hand, second incarnations of one
// identity, hand-made Leases (forged claims, huge durations), renewals
// and lists that fail. After each step it checks that no two members
// write for one hash, that a write in flight is never met by another
// member's right to write, that a member writes only within the claim of
// a Lease it holds, and that the targets of the members up cover the
// space exactly once; then it lets a lease duration pass and the ring
// settle, and checks that every hash has a writer: every member holding
// its Lease writes for exactly its target.
func TestRingModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { runModel(t) })
}

func newWorld() *world {
	return &world{server: map[string]*modelLease{}, members: map[string]*modelMember{}, gone: map[string]string{}, goneRV: map[string]int{}}
}

// start starts an incarnation of identity id and has it join.
func (w *world) start(id string) *modelMember {
	w.used++
	m := &modelMember{id: id, key: fmt.Sprintf("%s#%d", id, w.used), up: true, fresh: true, young: fixDeletedCounts, view: map[string]seen{}}
	w.members[m.key] = m
	for other := range w.server {
		w.refresh(m, other)
	}
	w.acquire(m)
	return m
}

func runModel(t *rapid.T) {
	w := newWorld()
	hashes := rapid.SampledFrom([]uint64{0, 1 << 62, 1<<63 - 1, 1 << 63, 3 << 62, ^uint64(0), 0x5555555555555555, 0xaaaaaaaaaaaaaaab})
	ids := 0
	for range rapid.IntRange(1, 3).Draw(t, "founders") {
		ids++
		w.start(fmt.Sprintf("m%d", ids))
	}
	forged := 0
	// on is the action that applies f to a member picked among those ok.
	on := func(label string, ok func(*modelMember) bool, f func(*modelMember)) func(*rapid.T) {
		return func(t *rapid.T) {
			if m := w.pick(t, label, ok); m != nil {
				f(m)
			}
		}
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
			ids++
			w.start(fmt.Sprintf("m%d", ids))
		},
		"twin": func(t *rapid.T) {
			// A second incarnation of an identity whose first still runs
			// (a pod force-recreated, one --ring-identity twice).
			m := w.pick(t, "twinned", func(m *modelMember) bool { return m.up })
			if m == nil || len(w.members) >= 6 {
				return
			}
			w.start(m.id)
		},
		"mature":  on("matured", func(m *modelMember) bool { return m.up && m.young }, func(m *modelMember) { w.mature(m) }),
		"acquire": on("joiner", func(m *modelMember) bool { return m.up && !m.holds }, func(m *modelMember) { w.acquire(m) }),
		"leave": func(t *rapid.T) {
			m := w.pick(t, "leaver", active)
			if m == nil {
				return
			}
			_, target := m.gate.Writing()
			m.gate.Set(target, nil, m.deadline())
			w.dropFlights(t, m)
			// A clean leave: an empty claim, then the deletion, of its
			// own Lease only.
			if w.publish(m, nil) {
				w.gone[m.id], w.goneRV[m.id] = m.key, w.server[m.id].rv
				delete(w.server, m.id)
			}
			delete(w.members, m.key)
		},
		"crash": func(t *rapid.T) {
			m := w.pick(t, "crasher", func(m *modelMember) bool { return m.up })
			if m == nil {
				return
			}
			w.dropFlights(t, m)
			m.up = false
		},
		"deleteByHand": func(t *rapid.T) {
			names := slices.Sorted(maps.Keys(w.server))
			if len(names) == 0 {
				return
			}
			name := rapid.SampledFrom(names).Draw(t, "deleted")
			// A Lease with a claim that a member up never saw gives it no
			// evidence to count (its watch cut for the Lease's whole
			// life): the ring's limit, left out.
			if !w.server[name].claim.Empty() {
				for _, m := range w.members {
					if _, saw := m.view[name]; m.up && m.id != name && !saw {
						return
					}
				}
			}
			w.gone[name], w.goneRV[name] = w.server[name].holder, w.server[name].rv
			delete(w.server, name)
		},
		"forge": func(t *rapid.T) {
			// A hand-made Lease: of a member's shape or not, its claim a
			// span or unreadable (everything), its duration huge or not.
			if forged >= 2 {
				return
			}
			forged++
			name := fmt.Sprintf("x%d", forged)
			claim := Full()
			if rapid.Bool().Draw(t, "readable") {
				a, b := hashes.Draw(t, "from"), hashes.Draw(t, "to")
				claim = Of(Span{min(a, b), max(a, b)})
			}
			w.rv++
			w.server[name] = &modelLease{claim: claim, rv: w.rv, member: rapid.Bool().Draw(t, "shaped"), huge: rapid.Bool().Draw(t, "huge")}
		},
		"handEdit": func(t *rapid.T) {
			// An edit that leaves the claim (a label, a waiting mark): the
			// holder's next renewal meets a conflict, reads the Lease
			// again and writes over it.
			names := slices.Sorted(maps.Keys(w.server))
			if len(names) == 0 {
				return
			}
			w.rv++
			w.server[rapid.SampledFrom(names).Draw(t, "edited")].rv = w.rv
		},
		"cut": func(t *rapid.T) {
			if m := w.pick(t, "cut", active); m != nil {
				m.cut = true
			}
		},
		"goStale": func(t *rapid.T) {
			// Cut off, or its renewals refused (its Lease deleted or
			// taken over, 429s, 500s, timeouts): its deadline passes.
			m := w.pick(t, "stale", func(m *modelMember) bool { return m.up && !m.stale })
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
			m.stale, m.cut = true, true
			wr, target := m.gate.Writing()
			m.gate.Set(target, wr, m.deadline())
		},
		"heal":  on("healed", func(m *modelMember) bool { return m.up && m.cut }, w.heal),
		"renew": on("renewer", active, func(m *modelMember) { w.publish(m, m.claim) }),
		"renewFails": func(t *rapid.T) {
			// A renewal refused (429, 500) or timed out before it applied
			// changes nothing; one timed out after it applied renews the
			// Lease unknown to its holder, whose next renewal meets a
			// conflict and writes over it.
			m := w.pick(t, "renewer", active)
			if m == nil {
				return
			}
			if l, ok := w.server[m.id]; ok && l.holder == m.key && rapid.Bool().Draw(t, "applied") {
				w.rv++
				l.rv = w.rv
			}
		},
		"validateFails": func(t *rapid.T) {
			// The validating list fails: the claim is withdrawn.
			m := w.pick(t, "taker", func(m *modelMember) bool { return active(m) && !m.pendingTake.Empty() })
			if m == nil {
				return
			}
			take := m.pendingTake
			m.pendingTake = nil
			w.publish(m, m.claim.Minus(take))
		},
		"refresh": func(t *rapid.T) {
			m := w.pick(t, "observer", func(m *modelMember) bool { return m.up })
			if m == nil {
				return
			}
			names := slices.Sorted(maps.Keys(w.server))
			for id := range m.view {
				if _, ok := w.server[id]; !ok {
					names = append(names, id) // gone: seen gone
				}
			}
			if len(names) > 0 {
				w.refresh(m, rapid.SampledFrom(names).Draw(t, "seen"))
			}
		},
		"judgeExpired": func(t *rapid.T) {
			obs := w.pick(t, "judge", func(m *modelMember) bool { return m.up })
			if obs == nil {
				return
			}
			var names []string
			for id, s := range obs.view {
				if id != obs.id && !s.expired && w.judgeable(s, id) {
					names = append(names, id)
				}
			}
			if len(names) == 0 {
				return
			}
			slices.Sort(names)
			id := rapid.SampledFrom(names).Draw(t, "expired")
			s := obs.view[id]
			s.expired = true
			obs.view[id] = s
		},
		// One whole round of the protocol, as the member runs it when
		// its writes in flight are done quickly.
		"round":        on("member", active, func(m *modelMember) { w.round(m) }),
		"refreshAll":   on("observer", isUp, w.refreshAll),
		"stop":         on("stopper", active, w.stopPhase),
		"publishStop":  on("stopper", active, func(m *modelMember) { w.publishStop(m) }),
		"takePublish":  on("taker", active, func(m *modelMember) { w.takePublish(m) }),
		"takeValidate": on("taker", active, func(m *modelMember) { w.takeValidate(m) }),
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
			m, i, f := w.pickFlight(t)
			if m == nil || f.committed {
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
			m, i, f := w.pickFlight(t)
			if m == nil {
				return
			}
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
}

// mature lets a lease duration pass since m began to watch the ring, as
// far as m can tell: every Lease deleted that m never saw has a holder
// that stopped.
func (w *world) mature(m *modelMember) bool {
	if !m.young {
		return false
	}
	for name, holder := range w.gone {
		if _, seen := m.view[name]; !seen && !w.released(name, holder) {
			return false
		}
	}
	m.young = false
	return true
}

// pickFlight picks a member up with holds and one of them, or returns a
// nil member.
func (w *world) pickFlight(t *rapid.T) (*modelMember, int, *flight) {
	m := w.pick(t, "writer", func(m *modelMember) bool { return m.up && len(m.flights) > 0 })
	if m == nil {
		return nil, 0, nil
	}
	i := rapid.IntRange(0, len(m.flights)-1).Draw(t, "flight")
	return m, i, m.flights[i]
}

// heal ends m's cut: a stale member's renewal completes past its deadline,
// so it starts again from nothing.
func (w *world) heal(m *modelMember) {
	m.cut = false
	if m.stale {
		m.stale = false
		m.pendingStop, m.pendingTake = nil, nil
		_, target := m.gate.Writing()
		m.gate.Set(target, nil, m.deadline())
		w.publish(m, nil)
	}
}

// refreshAll has m see every Lease as it is.
func (w *world) refreshAll(m *modelMember) {
	for _, id := range slices.Collect(maps.Keys(m.view)) {
		w.refresh(m, id)
	}
	for id := range w.server {
		w.refresh(m, id)
	}
}

// round runs one whole round of the protocol on m, and reports whether
// it changed anything.
func (w *world) round(m *modelMember) bool {
	if !m.holds {
		return w.acquire(m)
	}
	if !w.publish(m, m.claim) { // the renewal finds the Lease gone or taken over
		return true
	}
	w.stopPhase(m)
	changed := w.publishStop(m)
	changed = w.takePublish(m) || changed
	return w.takeValidate(m) || changed
}

// settle ends every cut, lets every member see every Lease, ends every
// hold, lets a lease duration pass (every Lease whose holder stopped, and
// every hand-made one a member honours no longer than its own, is judged
// expired), and runs the protocol until nothing changes; then every hash
// has a writer: every member holding its Lease writes for exactly its
// target, and the targets cover the space once.
func (w *world) settle(t *rapid.T) {
	for _, m := range w.members {
		if m.up && m.cut {
			w.heal(m)
		}
	}
	for _, m := range w.members {
		if m.up {
			w.dropFlights(t, m)
		}
	}
	keys := slices.Sorted(maps.Keys(w.members))
	for round := 0; ; round++ {
		if round > 20 {
			t.Fatalf("the ring did not settle in 20 rounds")
		}
		changed := false
		for _, key := range keys {
			m := w.members[key]
			if !m.up {
				continue
			}
			w.refreshAll(m)
			for id, s := range m.view {
				if id != m.id && !s.expired && w.judgeable(s, id) {
					s.expired = true
					m.view[id] = s
				}
			}
			before, _ := m.gate.Writing()
			changed = w.mature(m) || changed
			changed = w.round(m) || changed
			after, _ := m.gate.Writing()
			changed = changed || !before.Equal(after)
			w.check(t)
		}
		if !changed {
			break
		}
	}
	var up []string
	for _, key := range keys {
		if m := w.members[key]; m.up && m.holds {
			up = append(up, m.id)
		}
	}
	// Targets follow the claims the members published (Assign), as
	// every member computes them.
	claims := map[string]Set{}
	for _, id := range up {
		if l, ok := w.server[id]; ok {
			claims[id] = l.claim
		}
	}
	targets := Assign(up, claims)
	var all Set
	for _, key := range keys {
		m := w.members[key]
		if !m.up || !m.holds {
			continue
		}
		all = all.Union(m.writing())
		if got := m.writing(); !got.Equal(targets[m.id]) {
			t.Fatalf("settled: %s writes for %v, its target is %v", key, got, targets[m.id])
		}
	}
	if len(up) > 0 && !all.Equal(Full()) {
		t.Fatalf("settled: the members write for %v only; the rest has no writer", all)
	}
}

// TestHandoverWaitsForWritesInFlight: the model's scenario of a write in
// flight when its hash moves to a joining member; the old owner's smaller
// claim is published only once the write has landed.
func TestHandoverWaitsForWritesInFlight(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld()
		join := w.start
		round := func(m *modelMember) {
			w.refreshAll(m)
			w.mature(m)
			w.round(m)
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

// TestTwinFindsTheLeaseDeleted: the model's scenario of a second
// incarnation that waits for the first's Lease and finds it deleted by
// hand: it creates its own, while the first writes on until its next
// renewal; it must take nothing the first may write for meanwhile.
func TestTwinFindsTheLeaseDeleted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		w := newWorld()
		round := func(m *modelMember) {
			w.refreshAll(m)
			w.mature(m)
			w.round(m)
			w.check(t)
		}
		a1 := w.start("a")
		round(a1)
		if !a1.writing().Equal(Full()) {
			t.Fatalf("a1 alone writes for %v", a1.writing())
		}
		a2 := w.start("a")
		round(a2) // it waits
		if a2.holds {
			t.Fatalf("a2 holds the Lease a1 holds")
		}
		w.gone["a"], w.goneRV["a"] = a1.key, w.server["a"].rv
		delete(w.server, "a")
		round(a2) // it creates the Lease
		round(a2) // and may take
		if !a2.writing().Empty() {
			t.Fatalf("a2 writes for %v while a1 may still write for %v", a2.writing(), a1.writing())
		}
		w.settle(t) // a1 finds out and stops; a2 takes the space
		if !a2.writing().Equal(Full()) {
			t.Fatalf("settled: a2 writes for %v", a2.writing())
		}
	})
}
