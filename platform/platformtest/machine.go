package platformtest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"leasekit.dev/platform"
	"leasekit.dev/platform/platformmodule"
	"pgregory.net/rapid"
)

// The properties, as failure messages name them.
const (
	prop1 = "property 1 (no leased directory is removed or changed)"
	prop2 = "property 2 (the store holds only complete directories of the last successful Reconcile of their generation)"
	prop3 = "property 3 (a stale generation never replaces the record held)"
	prop4 = "property 4 (once every lease is released and the current generation is reconciled, Root holds only the current directory)"

	optSucceed      = "ReconcilesSucceed"
	optNoop         = "IdenticalIsNoop"
	optKeepServing  = "FailureKeepsServing"
	optNeverRefused = "LeasesNeverRefused"
)

// maxObservations bounds what the renders of one step remember.
const maxObservations = 256

// settleTries is how many times Check reconciles the current generation
// before it checks property 4, while the Reconcile fails.
const settleTries = 3

// machine is one sequence: the target, the resource it reconciles, and
// what Check knows about both.
type machine struct {
	cfg       config
	newTarget func(root string) (Target, error)
	root      string
	target    Target
	steps     []string // the sequence so far, in words

	// The Platform resource: its generation (0 when it does not exist)
	// and its files.
	gen    int64
	files  platformmodule.Files
	builds bool // whether files is a module that builds

	// What the store may hold, since the last Delete or restart: per
	// generation, the files of its last Reconcile that returned nil.
	ok map[int64]platformmodule.Files

	lastErr  error // what the last Reconcile returned
	last     int64 // the generation the store held at the end of the last step; 0 after a Delete or restart
	served   bool  // a Reconcile returned nil since the last Delete or restart
	held     []*heldLease
	leaseNo  int
	pending  *violation  // what an action broke, for the check after it
	shortest **violation // the failure with the fewest steps of all sequences
}

// A heldLease is a render that holds its lease across steps, on a
// goroutine of its own.
type heldLease struct {
	n       int
	rec     platform.Generated
	files   platformmodule.Files // what its directory held when leased
	release chan struct{}
	done    chan struct{}
}

func (h *heldLease) end() {
	close(h.release)
	<-h.done
}

func newMachine(t *rapid.T, cfg config, base string, newTarget func(root string) (Target, error), shortest **violation) *machine {
	dir, err := os.MkdirTemp(base, "seq-")
	if err != nil {
		t.Fatalf("platformtest: %v", err)
	}
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatalf("platformtest: %v", err)
	}
	m := &machine{cfg: cfg, newTarget: newTarget, root: root, ok: map[int64]platformmodule.Files{}, shortest: shortest}
	t.Cleanup(func() {
		m.releaseAll()
		if c, ok := m.target.(io.Closer); ok {
			if err := c.Close(); err != nil {
				t.Errorf("platformtest: closing the target at the end: %v", err)
			}
		}
		_ = os.RemoveAll(dir)
	})
	return m
}

// start makes the target on m.root.
func (m *machine) start() {
	var target Target
	var err error
	if perr := catch(func() { target, err = m.newTarget(m.root) }); perr != nil {
		m.fail("", "newTarget(%q) panicked: %v", m.root, perr)
	}
	if err != nil {
		m.fail("", "newTarget(%q): %v", m.root, err)
	}
	if target == nil || target.Store() == nil {
		m.fail("", "newTarget(%q) returned no target or a target with a nil Store", m.root)
	}
	m.target = target
}

// say adds a step to the sequence.
func (m *machine) say(format string, args ...any) {
	m.steps = append(m.steps, fmt.Sprintf(format, args...))
}

// fail fails the sequence, naming what broke and the steps that led there.
// It panics with a violation, which guard turns into the failure.
func (m *machine) fail(what, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if what != "" {
		msg = what + ": " + msg
	}
	seq := "(none)"
	if len(m.steps) > 0 {
		seq = strings.Join(m.steps, "; ")
	}
	v := &violation{msg: m.paths("platformtest: " + msg), seq: m.paths(seq), steps: len(m.steps)}
	if m.shortest != nil && (*m.shortest == nil || v.steps < (*m.shortest).steps) {
		*m.shortest = v
	}
	panic(v)
}

// A violation is a failure of the sequence, on its way to guard: what
// broke, and the steps that led there.
type violation struct {
	msg, seq string
	steps    int
}

// guard runs action, keeping the violation it panics with, if any, for
// the check that follows every action. A violation the check finds itself
// wins: it does not depend on what concurrent renders happened to see.
// Every failure is raised from that one place because rapid takes two
// failures for the same when they fail at the same place and read the
// same, so shrinking may trade one property's failure for a shorter
// sequence that breaks another.
func (m *machine) guard(action func(*rapid.T), check bool) func(*rapid.T) {
	return func(t *rapid.T) {
		v := func() (v *violation) {
			defer func() {
				if p := recover(); p != nil {
					var ok bool
					if v, ok = p.(*violation); !ok {
						panic(p)
					}
				}
			}()
			action(t)
			return nil
		}()
		if !check {
			if m.pending == nil {
				m.pending = v
			}
			return
		}
		if v == nil {
			v = m.pending
		}
		if v != nil {
			// The sequence is logged, not part of the failure: a step's
			// words may differ between two runs of one sequence (a
			// Reconcile that fails only when a render holds a lease),
			// and rapid shrinks only while a failure reads the same.
			t.Log("sequence: " + v.seq)
			t.Fatal(v.msg)
		}
	}
}

// paths names the sequence's root "Root" in s, so that a failure reads
// the same every time its sequence runs.
func (m *machine) paths(s string) string {
	return strings.ReplaceAll(s, m.root, "Root")
}

func (m *machine) store() *platform.Store { return m.target.Store() }

func (m *machine) actions() map[string]func(*rapid.T) {
	actions := map[string]func(*rapid.T){
		"reconcile a new generation": func(t *rapid.T) {
			gen := m.gen + rapid.Int64Range(1, 2).Draw(t, "step")
			mod := drawModule(t)
			m.reconcile(t, gen, mod, "new generation")
		},
		"reconcile changed files": func(t *rapid.T) {
			if m.gen == 0 {
				t.Skip("no resource")
			}
			mod := drawModule(t)
			if sameFiles(mod.files, m.files) {
				t.Skip("the same files")
			}
			m.reconcile(t, m.gen, mod, "same generation, changed files")
		},
		"reconcile again, identical": func(t *rapid.T) {
			if m.gen == 0 {
				t.Skip("no resource")
			}
			m.reconcile(t, m.gen, module{files: m.files, name: "identical", builds: m.builds}, "")
		},
		"reconcile a stale generation": func(t *rapid.T) {
			cur := m.store().Generation()
			if cur < 2 {
				t.Skip("no generation older than the store's")
			}
			gen := rapid.Int64Range(1, cur-1).Draw(t, "stale generation")
			m.reconcile(t, gen, drawModule(t), fmt.Sprintf("stale: the store holds %d", cur))
		},
		"reconcile a module that fails to build": func(t *rapid.T) {
			gen := m.gen + 1
			if m.gen > 0 && rapid.Bool().Draw(t, "same generation") {
				gen = m.gen
			}
			m.reconcile(t, gen, drawBroken(t), "")
		},
		"delete": func(t *rapid.T) {
			if m.gen == 0 && !rapid.Bool().Draw(t, "delete with no resource") {
				t.Skip("no resource")
			}
			m.delete(t)
		},
		"restart": func(t *rapid.T) {
			m.restart()
		},
		"lease and hold": func(t *rapid.T) {
			m.hold()
		},
		"release a held lease": func(t *rapid.T) {
			if len(m.held) == 0 {
				t.Skip("no lease held")
			}
			i := rapid.IntRange(0, len(m.held)-1).Draw(t, "lease")
			h := m.held[i]
			m.held = slices.Delete(m.held, i, i+1)
			h.end()
			m.say("release lease #%d", h.n)
		},
		"render": func(t *rapid.T) {
			o := render(m.store())
			m.say("render")
			m.checkObservation(o, m.ok, m.last, m.served, "a render")
		},
		"release every lease and reconcile": func(t *rapid.T) {
			if m.gen == 0 {
				t.Skip("no resource")
			}
			m.settle()
		},
		"": func(t *rapid.T) { m.invariants() },
	}
	for name, action := range actions {
		actions[name] = m.guard(action, name == "")
	}
	return actions
}

// reconcile reconciles gen with mod while some renders lease, and checks
// what they saw and what the options require. how, when not empty, says
// what kind of reconcile it is.
func (m *machine) reconcile(t *rapid.T, gen int64, mod module, how string) {
	renders := rapid.IntRange(0, 2).Draw(t, "concurrent renders")
	stale := gen < m.store().Generation()
	current := !stale
	if current {
		m.gen, m.files, m.builds = gen, mod.files, mod.builds
	}
	words := fmt.Sprintf("reconcile %d (%s", gen, mod.name)
	if how != "" {
		words += ", " + how
	}
	words += ")"
	if renders > 0 {
		words += fmt.Sprintf(" with %d concurrent renders", renders)
	}
	idle := len(m.held) == 0 && renders == 0
	m.reconcileOnce(gen, mod, stale, renders, words)
	if idle && current && sameFiles(m.ok[gen], mod.files) && sameFiles(m.files, mod.files) && m.lastErr == nil {
		m.waitRoot() // every lease was released before a Reconcile of the current generation that returned nil
	}
}

// reconcileOnce runs one Reconcile of gen with mod and checks its effects.
func (m *machine) reconcileOnce(gen int64, mod module, stale bool, renders int, words string) {
	before, held := m.store().Generated()
	var beforeDir os.FileInfo
	identical := held && before.Generation == gen && sameFiles(m.ok[gen], mod.files)
	if identical {
		beforeDir, _ = os.Stat(before.Dir)
	}
	okBefore := cloneOK(m.ok)
	servedBefore := m.served
	obs, err := m.op(words, renders, func(ctx context.Context) error {
		return m.target.Reconcile(ctx, gen, clone(mod.files))
	})
	m.lastErr = err
	if err == nil {
		m.ok[gen] = mod.files
		m.served = true
	} else {
		m.steps[len(m.steps)-1] += ": " + m.short(err)
	}
	for _, o := range obs {
		m.checkObservation(o, okBefore, m.last, servedBefore, "a render during the Reconcile")
	}
	after, holds := m.store().Generated()
	if m.cfg.succeed && err != nil && mod.builds && !stale {
		m.fail(optSucceed, "Reconcile of generation %d, a module that builds, returned %v", gen, err)
	}
	if m.cfg.keepServing && err != nil && (holds != held || after != before) {
		m.fail(optKeepServing, "a failed Reconcile of generation %d changed the record held from %s to %s", gen, describe(before, held), describe(after, holds))
	}
	if m.cfg.noop && identical {
		switch {
		case err != nil:
			m.fail(optNoop, "an identical Reconcile of generation %d returned %v", gen, err)
		case !holds || after != before:
			m.fail(optNoop, "an identical Reconcile of generation %d changed the record from %s to %s", gen, describe(before, held), describe(after, holds))
		}
		if fi, serr := os.Stat(after.Dir); beforeDir != nil && (serr != nil || !os.SameFile(beforeDir, fi)) {
			m.fail(optNoop, "an identical Reconcile of generation %d replaced its directory %s", gen, after.Dir)
		}
	}
}

// delete runs Delete while some renders lease.
func (m *machine) delete(t *rapid.T) {
	renders := rapid.IntRange(0, 2).Draw(t, "concurrent renders")
	words := "delete"
	if renders > 0 {
		words += fmt.Sprintf(" with %d concurrent renders", renders)
	}
	okBefore := cloneOK(m.ok)
	obs, err := m.op(words, renders, m.target.Delete)
	if err != nil {
		m.steps[len(m.steps)-1] += ": " + m.short(err)
	}
	m.gen, m.files, m.builds = 0, nil, false
	clear(m.ok)
	m.last, m.served = 0, false
	for _, o := range obs {
		// A record of before the Delete is no stale one, and a lease
		// may be refused once the resource is deleted.
		m.checkObservation(o, okBefore, 0, false, "a render during the Delete")
	}
}

// restart ends the target's process, with its leases, and makes a new
// target on the same root.
func (m *machine) restart() {
	m.say("restart")
	m.releaseAll()
	if c, ok := m.target.(io.Closer); ok {
		if err := c.Close(); err != nil {
			m.fail("", "closing the target before a restart: %v", err)
		}
	}
	m.target = nil
	clear(m.ok)
	m.last, m.served = 0, false
	m.start()
}

// hold takes a lease on a goroutine that holds it until released.
func (m *machine) hold() {
	m.leaseNo++
	h := &heldLease{n: m.leaseNo, release: make(chan struct{}), done: make(chan struct{})}
	got := make(chan observation)
	store := m.store()
	go func() {
		defer close(h.done)
		rec, release, ok := store.Lease()
		defer release()
		o := observation{ok: ok, rec: rec}
		if ok {
			o.first, o.err1 = readTree(rec.Dir)
			o.second, o.err2 = o.first, o.err1
		}
		got <- o
		if ok {
			<-h.release
		}
	}()
	o := <-got
	if !o.ok {
		<-h.done // it returned at once
		m.say("lease refused")
		m.checkObservation(o, m.ok, m.last, m.served, "a lease")
		return
	}
	h.rec, h.files = o.rec, o.first
	m.held = append(m.held, h)
	m.say("lease #%d held (generation %d)", h.n, o.rec.Generation)
	m.checkObservation(o, m.ok, m.last, m.served, fmt.Sprintf("lease #%d", h.n))
}

// releaseAll releases every held lease.
func (m *machine) releaseAll() {
	for _, h := range m.held {
		h.end()
	}
	m.held = nil
}

// settle releases every lease, reconciles the current generation with its
// files until it succeeds (a few tries) and checks property 4.
func (m *machine) settle() {
	m.releaseAll()
	m.say("release every lease")
	for range settleTries {
		gen := m.gen
		m.reconcileOnce(gen, module{files: m.files, name: "current files", builds: m.builds}, false, 0, fmt.Sprintf("reconcile %d (current files)", gen))
		if m.lastErr == nil {
			m.waitRoot()
			return
		}
	}
}

// waitRoot waits, within the bound, until Root holds only the directory of
// the record the store holds (nothing when it holds none).
func (m *machine) waitRoot() {
	deadline := time.Now().Add(m.cfg.reclaimWait)
	delay := time.Millisecond
	for {
		rec, held := m.store().Generated()
		want := ""
		if held {
			want = entryOf(m.root, rec.Dir)
		}
		got, err := rootEntries(m.root)
		if err != nil {
			m.fail(prop4, "listing Root: %v", err)
		}
		if len(got) == 0 && want == "" || len(got) == 1 && got[0] == want {
			return
		}
		if time.Now().After(deadline) {
			m.fail(prop4, "%v after every lease was released and generation %d was reconciled, Root holds %q; the store holds %s", m.cfg.reclaimWait, m.gen, got, describe(rec, held))
		}
		time.Sleep(delay)
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// invariants checks properties 1 to 3 between steps.
func (m *machine) invariants() {
	for _, h := range m.held {
		files, err := readTree(h.rec.Dir)
		if err != nil {
			m.fail(prop1, "lease #%d holds generation %d, whose directory %s is gone: %v", h.n, h.rec.Generation, h.rec.Dir, err)
		}
		if !sameFiles(files, h.files) {
			m.fail(prop1, "lease #%d holds generation %d, whose directory %s changed: %s", h.n, h.rec.Generation, h.rec.Dir, diff(files, h.files))
		}
	}
	rec, held := m.store().Generated()
	if !held {
		m.last = 0
		return
	}
	m.checkRecord(rec, m.ok, nil, "the store")
	if rec.Generation < m.last {
		m.fail(prop3, "the store held generation %d and now holds %d", m.last, rec.Generation)
	}
	m.last = rec.Generation
}

// checkRecord checks property 2 of rec, whose directory was read as files
// (nil: read it now): it must hold the files of the last Reconcile of its
// generation that returned nil, by ok or by also.
func (m *machine) checkRecord(rec platform.Generated, ok map[int64]platformmodule.Files, files platformmodule.Files, who string) {
	if files == nil {
		var err error
		if files, err = readTree(rec.Dir); err != nil {
			m.fail(prop2, "%s holds generation %d, whose directory %q is absent or unreadable: %v", who, rec.Generation, rec.Dir, err)
		}
	}
	want, found := ok[rec.Generation]
	wantNow, foundNow := m.ok[rec.Generation]
	switch {
	case found && sameFiles(files, want), foundNow && sameFiles(files, wantNow):
		return
	case !found && !foundNow:
		m.fail(prop2, "%s holds generation %d (directory %s), for which no Reconcile since the last Delete or restart returned nil", who, rec.Generation, rec.Dir)
	case foundNow:
		m.fail(prop2, "%s holds generation %d, whose directory %s does not hold the files of its last successful Reconcile: %s", who, rec.Generation, rec.Dir, diff(files, wantNow))
	default:
		m.fail(prop2, "%s holds generation %d, whose directory %s does not hold the files of its last successful Reconcile: %s", who, rec.Generation, rec.Dir, diff(files, want))
	}
}

// An observation is what one render saw: whether it got a lease, the
// record, and its directory read twice while leased.
type observation struct {
	ok            bool
	rec           platform.Generated
	first, second platformmodule.Files
	err1, err2    error
}

// render leases, reads the directory twice and releases.
func render(store *platform.Store) observation {
	rec, release, ok := store.Lease()
	defer release()
	if !ok {
		return observation{}
	}
	o := observation{ok: true, rec: rec}
	o.first, o.err1 = readTree(rec.Dir)
	runtime.Gosched()
	o.second, o.err2 = readTree(rec.Dir)
	return o
}

// checkObservation checks what a render saw: ok is what the store could
// hold when it leased (besides m.ok), last the generation it held before,
// served whether a refused lease breaks LeasesNeverRefused.
func (m *machine) checkObservation(o observation, ok map[int64]platformmodule.Files, last int64, served bool, who string) {
	if !o.ok {
		if m.cfg.neverRefused && served {
			m.fail(optNeverRefused, "%s was refused after a Reconcile had returned nil", who)
		}
		return
	}
	if o.err1 != nil {
		m.fail(prop2, "%s leased generation %d, whose directory %q is absent or unreadable: %v", who, o.rec.Generation, o.rec.Dir, o.err1)
	}
	if o.err2 != nil {
		m.fail(prop1, "%s leased generation %d, whose directory %s went while leased: %v", who, o.rec.Generation, o.rec.Dir, o.err2)
	}
	if !sameFiles(o.first, o.second) {
		m.fail(prop1, "%s leased generation %d, whose directory %s changed while leased: %s", who, o.rec.Generation, o.rec.Dir, diff(o.second, o.first))
	}
	m.checkRecord(o.rec, ok, o.first, who)
	if o.rec.Generation < last {
		m.fail(prop3, "the store held generation %d, and %s leased generation %d", last, who, o.rec.Generation)
	}
}

// op runs f (a Reconcile or a Delete) on a goroutine of its own while
// renders lease, read and release on others until it returns, and returns
// its error and what the renders saw. When f runs longer than
// releaseAfter, every held lease is released; when it runs longer than
// reclaimWait after that, the sequence fails.
func (m *machine) op(words string, renders int, f func(context.Context) error) ([]observation, error) {
	m.say("%s", words)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]bool{}
	var obs []observation
	store := m.store()
	for range renders {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				o := render(store)
				key := o.key()
				mu.Lock()
				if !seen[key] && len(obs) < maxObservations {
					seen[key] = true
					obs = append(obs, o)
				}
				mu.Unlock()
			}
		})
	}

	done := make(chan error, 1)
	go func() {
		var err error
		if p := catch(func() { err = f(ctx) }); p != nil {
			err = &panicError{p}
		}
		done <- err
	}()
	var err error
	timer := time.NewTimer(m.cfg.releaseAfter)
	select {
	case err = <-done:
		timer.Stop()
	case <-timer.C:
		if len(m.held) > 0 {
			m.releaseAll()
			m.steps[len(m.steps)-1] += " (held leases released while it ran)"
		}
		hang := time.NewTimer(m.cfg.reclaimWait)
		select {
		case err = <-done:
			hang.Stop()
		case <-hang.C:
			close(stop)
			m.fail("", "%s has not returned %v after every lease was released", words, m.cfg.reclaimWait)
		}
	}
	close(stop)
	wg.Wait()
	if p, ok := err.(*panicError); ok {
		m.fail("", "%s panicked: %v", words, p.v)
	}
	return obs, err
}

// key identifies what an observation saw, to remember each thing once.
func (o observation) key() string {
	if !o.ok {
		return "refused"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d\x00%s\x00%p\x00%v\x00%v\x00%v\x00", o.rec.Generation, o.rec.Dir, o.rec.Platform, o.rec.Skew, o.err1, o.err2)
	for _, files := range []platformmodule.Files{o.first, o.second} {
		for _, name := range slices.Sorted(maps.Keys(files)) {
			fmt.Fprintf(&b, "%s\x00%d\x00%s\x00", name, len(files[name]), files[name])
		}
		b.WriteByte(1)
	}
	return b.String()
}

type panicError struct{ v any }

func (e *panicError) Error() string { return fmt.Sprint("panic: ", e.v) }

// catch calls f and returns what it panicked with, if it did.
func catch(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// describe names a record, or its absence.
func describe(rec platform.Generated, held bool) string {
	if !held {
		return "no record"
	}
	return fmt.Sprintf("generation %d in %s", rec.Generation, rec.Dir)
}

// short returns err's message on one line, cut to a readable length.
func (m *machine) short(err error) string {
	s := m.paths(strings.Join(strings.Fields(err.Error()), " "))
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func clone(files platformmodule.Files) platformmodule.Files {
	c := make(platformmodule.Files, len(files))
	for name, data := range files {
		c[name] = bytes.Clone(data)
	}
	return c
}

func cloneOK(ok map[int64]platformmodule.Files) map[int64]platformmodule.Files {
	c := make(map[int64]platformmodule.Files, len(ok))
	for g, files := range ok {
		c[g] = files
	}
	return c
}
