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
)

// The properties, as failure messages name them.
const (
	prop1 = "property 1 (no leased directory is removed or changed)"
	prop2 = "property 2 (the store holds only records renders can read: a Platform built from the record's Dir, holding the files of the last successful Reconcile of its generation)"
	prop3 = "property 3 (a stale generation never replaces the record held)"
	prop4 = "property 4 (once every lease is released and the current generation is reconciled, Root holds only the current directory)"
	prop5 = "property 5 (a Reconcile that returns nil serves its generation, and nothing is served after a Delete that returns nil)"

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
	// generation, the files of its last Reconcile of a module that builds
	// that returned nil.
	ok map[int64]platformmodule.Files

	lastErr error // what the last Reconcile returned
	last    int64 // the generation the store held at the end of the last step; 0 after a Delete or restart
	served  bool  // a Reconcile of a module that builds returned nil since the last Delete or restart
	held    []*heldLease
	leaseNo int

	// pending is what the last action broke, found at the step boundary
	// and reported by the check that follows it. deferred is the first
	// thing a render running during a Reconcile or Delete saw broken: it
	// depends on the scheduler, so it fails no sequence (see
	// deferProblem).
	pending, deferred *violation

	// Where the sequence's choices come from, and the steps it has run
	// with the choices each drew (cur is the step running).
	src    source
	script []step
	cur    step

	failure     *outcome // how the sequence failed, once it has
	reproducing bool     // rapid runs the sequence again to reproduce a failure
}

// A heldLease is a render that holds its lease across steps, on a
// goroutine of its own, and its directory open.
type heldLease struct {
	n       int
	rec     platform.Generated
	dir     *dirHandle
	files   platformmodule.Files // what its directory held when leased
	release chan struct{}
	done    chan struct{}
}

// end closes the directory and releases the lease, as a render that
// finishes does.
func (h *heldLease) end() {
	h.dir.close()
	close(h.release)
	<-h.done
}

// newMachine returns a sequence on a Root of its own under base. Its
// target is made by start; close ends it.
func newMachine(cfg config, base string, newTarget func(root string) (Target, error)) (*machine, error) {
	dir, err := os.MkdirTemp(base, "seq-")
	if err != nil {
		return nil, err
	}
	root := filepath.Join(dir, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return &machine{cfg: cfg, newTarget: newTarget, root: root, ok: map[int64]platformmodule.Files{}}, nil
}

// close releases every lease, closes the target if it is an io.Closer,
// and removes the sequence's directory. It returns what Close returned.
func (m *machine) close() error {
	m.releaseAll()
	var err error
	if c, ok := m.target.(io.Closer); ok {
		err = c.Close()
	}
	_ = os.RemoveAll(filepath.Dir(m.root))
	return err
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

// A problem is a property broken: which one, what broke, in words that
// are the same each time the sequence runs, and, in detail, what may
// differ between runs (a path outside Root).
type problem struct {
	cut               bool // see violation.cut
	what, msg, detail string
	kind              string // the property, or for a failure that is none (a hang, a panic) what kind it is
}

// bad returns the problem that what is broken as format says. A what of
// "" is a failure that breaks no property; format tells its kind.
func bad(what, format string, args ...any) *problem {
	kind := what
	if kind == "" {
		kind = format
	}
	return &problem{what: what, msg: fmt.Sprintf(format, args...), kind: kind}
}

// A violation is a failure of the sequence: what broke and the steps that
// led there.
type violation struct {
	cut    bool   // a wait that the test's deadline ended (see config.deadline)
	kind   string // the property broken, the same in every sequence that breaks it
	msg    string // the same each time its sequence runs
	detail string // what was seen, which may differ between runs
	seq    string
	steps  int
}

// text is the violation in full.
func (v *violation) text() string {
	if v.detail == "" {
		return v.msg
	}
	return v.msg + "\n" + v.detail
}

// violation returns p as the sequence's violation, at the steps so far.
func (m *machine) violation(p *problem) *violation {
	msg := p.msg
	if p.what != "" {
		msg = p.what + ": " + msg
	}
	seq := "(none)"
	if len(m.steps) > 0 {
		seq = strings.Join(m.steps, "; ")
	}
	return &violation{cut: p.cut, kind: p.kind, msg: m.paths("platformtest: " + msg), detail: m.paths(p.detail), seq: m.paths(seq), steps: len(m.steps)}
}

// fail fails the sequence at this step, naming what broke. It panics with
// a violation, which guard turns into the failure.
func (m *machine) fail(what, format string, args ...any) {
	m.failWith(bad(what, format, args...))
}

func (m *machine) failWith(p *problem) {
	panic(m.violation(p))
}

// deferProblem keeps p, which a render running during a Reconcile or
// Delete saw, unless an earlier one was kept. It fails no sequence: what
// such a render sees depends on the scheduler, and a rerun of the sequence
// may not see it, so rapid could not shrink it. Check reports the shortest
// sequence in which one was seen, when no sequence fails at a step
// boundary.
func (m *machine) deferProblem(p *problem) {
	if m.deferred == nil {
		m.deferred = m.violation(p)
	}
}

// act runs the action name, keeping the violation it panics with, if
// any, for the check at the step boundary that follows it. A step that
// ran, to its end or to a violation, joins m.script with the choices it
// drew; one that skipped itself does not, and its skip goes on up.
func (m *machine) act(name string, action func()) {
	m.cur = step{action: name}
	v := catchViolation(action)
	m.script = append(m.script, m.cur)
	if m.pending == nil {
		m.pending = v
	}
}

// boundary checks properties 1 to 3 at a step boundary and returns the
// sequence's violation: the one it finds, or else the one the step
// found. Every failure is decided here, once its step is over, so that a
// sequence run again fails again, at the same step.
func (m *machine) boundary() *violation {
	if v := catchViolation(m.invariants); v != nil {
		return v
	}
	return m.pending
}

// catchViolation calls f and returns the violation it panics with, if
// any; any other panic goes on up.
func catchViolation(f func()) (v *violation) {
	defer func() {
		if p := recover(); p != nil {
			var ok bool
			if v, ok = p.(*violation); !ok {
				panic(p)
			}
		}
	}()
	f()
	return nil
}

// paths names the sequence's root "Root" in s, so that a failure reads
// the same every time its sequence runs.
func (m *machine) paths(s string) string {
	return strings.ReplaceAll(s, m.root, "Root")
}

func (m *machine) store() *platform.Store { return m.target.Store() }

// actions are the steps a sequence draws from, by name. An action draws
// its choices from m.src, and skips itself (m.skip) before it changes
// anything when it does not apply.
func (m *machine) actions() map[string]func() {
	return map[string]func(){
		"reconcile a new generation": func() {
			gen := m.gen + m.draw("step", 1, 2)
			mod := m.drawModule()
			m.reconcile(gen, mod, "new generation", throughDrawn)
		},
		"reconcile changed files": func() {
			if m.gen == 0 {
				m.skip("no resource")
			}
			mod := m.drawModule()
			if sameFiles(mod.files, m.files) {
				m.skip("the same files")
			}
			m.reconcile(m.gen, mod, "same generation, changed files", throughNever)
		},
		"reconcile again, identical": func() {
			if m.gen == 0 {
				m.skip("no resource")
			}
			// A render holds the directory through it: an identical
			// reconcile must leave it as it is.
			m.reconcile(m.gen, module{files: m.files, name: "identical", builds: m.builds}, "", throughAlways)
		},
		"reconcile a stale generation": func() {
			cur := m.store().Generation()
			if cur < 2 {
				m.skip("no generation older than the store's")
			}
			gen := m.draw("stale generation", 1, cur-1)
			m.reconcile(gen, m.drawModule(), fmt.Sprintf("stale: the store holds %d", cur), throughDrawn)
		},
		// A module that fails to build, at a new generation and as the
		// current generation's changed files: two steps, each as likely as
		// any other, since a failed build is where a target that removes
		// the served directory too early shows it at a step boundary.
		"reconcile a new generation that fails to build": func() {
			m.reconcile(m.gen+1, m.drawBroken(), "", throughDrawn)
		},
		"reconcile changed files that fail to build": func() {
			if m.gen == 0 {
				m.skip("no resource")
			}
			m.reconcile(m.gen, m.drawBroken(), "same generation", throughNever)
		},
		"delete": func() {
			if m.gen == 0 && !m.drawBool("delete with no resource") {
				m.skip("no resource")
			}
			m.delete()
		},
		"restart": func() {
			m.restart()
		},
		"lease and hold": func() {
			m.skipIfNothingToLease()
			m.hold()
		},
		"release a held lease": func() {
			if len(m.held) == 0 {
				m.skip("no lease held")
			}
			i := int(m.draw("lease", 0, int64(len(m.held)-1)))
			h := m.held[i]
			m.held = slices.Delete(m.held, i, i+1)
			h.end()
			m.say("release lease #%d", h.n)
		},
		"render": func() {
			m.skipIfNothingToLease()
			withKernel := m.drawBool("with the kernel")
			o := render(m.store(), withKernel)
			if withKernel {
				m.say("render with the kernel")
			} else {
				m.say("render")
			}
			if p := m.observed(o, m.ok, m.last, m.served, "a render"); p != nil {
				m.failWith(p)
			}
		},
		"release every lease and reconcile": func() {
			if m.gen == 0 {
				m.skip("no resource")
			}
			m.settle()
		},
	}
}

// readers are the renders that run while a Reconcile or Delete does:
// some that lease, read and release in a loop, and perhaps one that leases
// before it starts and holds its lease until it returns, as a render
// slower than the Reconcile does, rendering with the kernel meanwhile.
type readers struct {
	loops      int
	through    bool // a render holds its lease through the Reconcile or Delete
	withKernel bool // that render renders with the kernel
}

// skipIfNothingToLease skips a lease of a store that holds nothing, whose
// refusal breaks no property.
func (m *machine) skipIfNothingToLease() {
	if _, held := m.store().Generated(); !held && !(m.cfg.neverRefused && m.served) {
		m.skip("nothing to lease")
	}
}

// When a render holds its lease through a step.
type throughMode int

const (
	throughNever  throughMode = iota // a step a correct reconciler may take only once no render holds the directory: it would wait for the render
	throughDrawn                     // a step a correct reconciler takes with no wait for its readers
	throughAlways                    // an identical reconcile, which must leave the directory a render holds as it is
)

// drawReaders draws the readers of a step.
func (m *machine) drawReaders(through throughMode) readers {
	// Renders in a loop in one step out of three or so: what they see,
	// and what a target that looks at Store.Leased does meanwhile, may
	// differ each time a sequence runs, and rapid shrinks a sequence only
	// while a rerun fails the same way.
	r := readers{loops: max(0, int(m.draw("concurrent renders", 0, 5))-3)}
	switch through {
	case throughAlways:
		r.through = true
	case throughDrawn:
		r.through = m.drawBool("a render holds its lease through it")
	}
	if r.through {
		r.withKernel = m.drawBool("it renders with the kernel")
	}
	return r
}

// words says what the loops are; the render that holds its lease through
// is said once it has leased.
func (r readers) words() string {
	if r.loops == 0 {
		return ""
	}
	return fmt.Sprintf(" with %d concurrent renders", r.loops)
}

// reconcile reconciles gen with mod while some renders lease, and checks
// what they saw and what the properties require. how, when not empty,
// says what kind of reconcile it is.
func (m *machine) reconcile(gen int64, mod module, how string, through throughMode) {
	r := m.drawReaders(through)
	stale := gen < m.store().Generation()
	current := !stale
	if current {
		m.gen, m.files, m.builds = gen, mod.files, mod.builds
	}
	words := fmt.Sprintf("reconcile %d (%s", gen, mod.name)
	if how != "" {
		words += ", " + how
	}
	words += ")" + r.words()
	idle := len(m.held) == 0 && r.loops == 0 && !r.through
	m.reconcileOnce(gen, mod, stale, r, words)
	if idle && current && sameFiles(m.ok[gen], mod.files) && sameFiles(m.files, mod.files) && m.lastErr == nil {
		m.waitRoot() // every lease was released before a Reconcile of the current generation that returned nil
	}
}

// reconcileOnce runs one Reconcile of gen with mod and checks its effects.
func (m *machine) reconcileOnce(gen int64, mod module, stale bool, r readers, words string) {
	before, held := m.store().Generated()
	identical := held && before.Generation == gen && sameFiles(m.ok[gen], mod.files)
	var beforeDir *dirHandle
	if identical && m.cfg.noop {
		if h, err := openDir(before.Dir); err == nil {
			beforeDir = h
			defer h.close()
		}
	}
	okBefore := maps.Clone(m.ok)
	servedBefore := m.served
	res := m.op(words, "the Reconcile", r, func(ctx context.Context) error {
		return m.target.Reconcile(ctx, gen, clone(mod.files))
	})
	err := res.err
	m.lastErr = err
	if err == nil && mod.builds {
		m.ok[gen] = mod.files
		m.served = true
	}
	if err != nil {
		m.steps[len(m.steps)-1] += ": " + m.short(err)
	}
	m.checkReaders(res, okBefore, m.last, servedBefore, "the Reconcile")
	after, holds := m.store().Generated()
	if m.cfg.succeed && err != nil && mod.builds && !stale {
		m.fail(optSucceed, "Reconcile of generation %d, a module that builds, returned %v", gen, err)
	}
	if err == nil && mod.builds && !stale {
		m.checkProgress(gen, mod.files, after, holds)
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
		if beforeDir != nil {
			if why := beforeDir.changed(); why != "" {
				m.fail(optNoop, "an identical Reconcile of generation %d replaced its directory %s, which %s", gen, after.Dir, why)
			}
		}
	}
}

// checkProgress checks property 5 after a Reconcile of gen with files, a
// module that builds at a generation no older than the one served, has
// returned nil: the store holds gen with files, or a newer generation.
func (m *machine) checkProgress(gen int64, files platformmodule.Files, after platform.Generated, holds bool) {
	if !holds || after.Generation < gen {
		m.fail(prop5, "Reconcile of generation %d returned nil, yet the store holds %s: a Reconcile that has not served its generation must return an error", gen, describe(after, holds))
	}
	if after.Generation > gen {
		return
	}
	got, err := readTree(after.Dir)
	if err != nil {
		m.fail(prop5, "Reconcile of generation %d returned nil, yet the directory %s of the record held is absent or unreadable: %v", gen, after.Dir, err)
	}
	if !sameFiles(got, files) {
		m.fail(prop5, "Reconcile of generation %d returned nil, yet the store serves it from %s, which does not hold the files reconciled: %s", gen, after.Dir, diff(got, files))
	}
}

// delete runs Delete while some renders lease.
func (m *machine) delete() {
	r := m.drawReaders(throughDrawn)
	okBefore := maps.Clone(m.ok)
	res := m.op("delete"+r.words(), "the Delete", r, m.target.Delete)
	err := res.err
	if err != nil {
		m.steps[len(m.steps)-1] += ": " + m.short(err)
	}
	m.gen, m.files, m.builds = 0, nil, false
	clear(m.ok)
	m.last, m.served = 0, false
	// A record of before the Delete is no stale one, and a lease may be
	// refused once the resource is deleted.
	m.checkReaders(res, okBefore, 0, false, "the Delete")
	if rec, held := m.store().Generated(); err == nil && held {
		m.fail(prop5, "Delete returned nil, yet the store holds %s", describe(rec, held))
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

// hold takes a lease on a goroutine that holds it until released, and
// holds its directory open.
func (m *machine) hold() {
	m.leaseNo++
	h := &heldLease{n: m.leaseNo, release: make(chan struct{}), done: make(chan struct{})}
	type leased struct {
		o   observation
		dir *dirHandle
	}
	got := make(chan leased)
	store := m.store()
	go func() {
		defer close(h.done)
		rec, release, ok := store.Lease()
		defer release()
		l := leased{o: observation{ok: ok, rec: rec}}
		if ok {
			l.dir, l.o.err1 = openDir(rec.Dir)
			if l.o.err1 == nil {
				l.o.first, l.o.err1 = l.dir.read()
			}
			l.o.second, l.o.err2 = l.o.first, l.o.err1
		}
		got <- l
		if l.dir != nil {
			<-h.release
		}
	}()
	l := <-got
	if l.dir == nil {
		<-h.done // it returned at once
		if l.o.ok {
			m.say("lease #%d (generation %d)", h.n, l.o.rec.Generation)
		} else {
			m.say("lease refused")
		}
		if p := m.observed(l.o, m.ok, m.last, m.served, "a lease"); p != nil {
			m.failWith(p)
		}
		return
	}
	h.rec, h.dir, h.files = l.o.rec, l.dir, l.o.first
	m.held = append(m.held, h)
	m.say("lease #%d held (generation %d)", h.n, h.rec.Generation)
	if p := m.observed(l.o, m.ok, m.last, m.served, fmt.Sprintf("lease #%d", h.n)); p != nil {
		m.failWith(p)
	}
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
		m.reconcileOnce(gen, module{files: m.files, name: "current files", builds: m.builds}, false, readers{}, fmt.Sprintf("reconcile %d (current files)", gen))
		if m.lastErr == nil {
			m.waitRoot()
			return
		}
	}
}

// waitRoot waits, within the bound, until Root holds only the directory of
// the record the store holds (nothing when it holds none).
func (m *machine) waitRoot() {
	over, stop := m.cfg.waitBound()
	defer stop()
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
		select {
		case <-over:
			p := bad(prop4, "waited %s after every lease was released and generation %d was reconciled: Root holds %q; the store holds %s", m.cfg.waitWords(), m.gen, got, describe(rec, held))
			p.cut = m.cfg.reclaimWait == 0
			m.failWith(p)
		default:
		}
		time.Sleep(delay)
		delay = min(2*delay, 50*time.Millisecond)
	}
}

// invariants checks properties 1 to 3 at a step boundary: every held
// lease's directory, through the handle held on it, and the record the
// store holds.
func (m *machine) invariants() {
	for _, h := range m.held {
		if p := h.problem(); p != nil {
			m.failWith(p)
		}
	}
	rec, held := m.store().Generated()
	if !held {
		m.last = 0
		return
	}
	if p := m.recordProblem(rec, m.ok, nil, "the store"); p != nil {
		m.failWith(p)
	}
	if rec.Generation < m.last {
		m.fail(prop3, "the store held generation %d and now holds %d", m.last, rec.Generation)
	}
	m.last = rec.Generation
}

// leaseProblem checks property 1 of a lease who holds on rec, whose
// directory it holds open as dir and held files when leased: the path
// still names that directory, which still holds those files.
func leaseProblem(who string, rec platform.Generated, dir *dirHandle, files platformmodule.Files) *problem {
	if why := dir.changed(); why != "" {
		if now, err := readTree(rec.Dir); err == nil && sameFiles(now, files) {
			why += ", holding the same files"
		}
		return bad(prop1, "%s holds generation %d, whose directory %s changed: it %s", who, rec.Generation, rec.Dir, why)
	}
	now, err := dir.read()
	if err != nil {
		return bad(prop1, "%s holds generation %d, whose directory %s can no longer be read: %v", who, rec.Generation, rec.Dir, err)
	}
	if !sameFiles(now, files) {
		return bad(prop1, "%s holds generation %d, whose directory %s changed: %s", who, rec.Generation, rec.Dir, diff(now, files))
	}
	return nil
}

// problem checks property 1 of a held lease.
func (h *heldLease) problem() *problem {
	return leaseProblem(fmt.Sprintf("lease #%d", h.n), h.rec, h.dir, h.files)
}

// recordProblem checks property 2 of rec, which who holds, whose
// directory was read as files (nil: read it now): its Platform was built
// from its Dir, the directory every render reads, and it holds the files
// of the last Reconcile of its generation that returned nil, by ok or by
// m.ok.
func (m *machine) recordProblem(rec platform.Generated, ok map[int64]platformmodule.Files, files platformmodule.Files, who string) *problem {
	if p := shapeProblem(rec, who); p != nil {
		return p
	}
	if files == nil {
		var err error
		if files, err = readTree(rec.Dir); err != nil {
			return bad(prop2, "%s holds generation %d, whose directory %s is absent or unreadable: %v", who, rec.Generation, rec.Dir, err)
		}
	}
	want, found := ok[rec.Generation]
	wantNow, foundNow := m.ok[rec.Generation]
	switch {
	case found && sameFiles(files, want), foundNow && sameFiles(files, wantNow):
		return nil
	case !found && !foundNow:
		return bad(prop2, "%s holds generation %d (directory %s), for which no Reconcile since the last Delete or restart returned nil", who, rec.Generation, rec.Dir)
	case foundNow:
		return bad(prop2, "%s holds generation %d, whose directory %s does not hold the files of its last successful Reconcile: %s", who, rec.Generation, rec.Dir, diff(files, wantNow))
	default:
		return bad(prop2, "%s holds generation %d, whose directory %s does not hold the files of its last successful Reconcile: %s", who, rec.Generation, rec.Dir, diff(files, want))
	}
}

// shapeProblem checks the part of property 2 that needs no reading: rec,
// which who holds, has a Platform built from its Dir, the directory every
// render reads, and that Dir is absolute and clean, as the Platform's is.
func shapeProblem(rec platform.Generated, who string) *problem {
	switch {
	case rec.Platform == nil:
		return bad(prop2, "%s holds generation %d with no Platform: renders have nothing to render", who, rec.Generation)
	case !filepath.IsAbs(rec.Dir) || filepath.Clean(rec.Dir) != rec.Dir:
		return bad(prop2, "%s holds generation %d, whose Dir %q is not an absolute, clean path, as its Platform's Dir is", who, rec.Generation, rec.Dir)
	case rec.Platform.Dir != rec.Dir:
		p := bad(prop2, "%s holds generation %d, whose Platform was built from another directory than its Dir %s: renders read the Platform's directory, which no lease protects", who, rec.Generation, rec.Dir)
		p.detail = fmt.Sprintf("its Platform's Dir is %s", rec.Platform.Dir)
		return p
	}
	return nil
}

// An observation is what one render saw: whether it got a lease, the
// record, its directory read twice through a handle held open while
// leased, whether the path named that directory still at the end, and
// what the kernel's render of it returned, if it rendered.
type observation struct {
	ok            bool
	rec           platform.Generated
	first, second platformmodule.Files
	err1, err2    error
	changed       string // how the path no longer named the directory held, "" while it did
	rendered      bool   // whether the kernel rendered the record
	renderErr     error
}

// render leases, renders the leased record, and releases.
func render(store *platform.Store, withKernel bool) observation {
	rec, release, ok := store.Lease()
	defer release()
	return renderLeased(rec, ok, withKernel)
}

// renderLeased reads the directory of rec, which the caller holds
// leased, twice through a handle held open, with the kernel's render of
// it between the reads when withKernel is set.
func renderLeased(rec platform.Generated, ok, withKernel bool) observation {
	if !ok {
		return observation{}
	}
	o := observation{ok: true, rec: rec}
	dir, err := openDir(rec.Dir)
	if err != nil {
		o.err1 = err
		return o
	}
	defer dir.close()
	o.first, o.err1 = dir.read()
	if o.err1 != nil {
		return o
	}
	if withKernel && rec.Platform != nil && rec.Platform.Dir == rec.Dir {
		o.rendered = true
		o.renderErr = renderWithKernel(rec)
	} else {
		runtime.Gosched()
	}
	o.second, o.err2 = dir.read()
	o.changed = dir.changed()
	return o
}

// observed checks what a render saw, and returns the first property it
// breaks: ok is what the store could hold when it leased (besides m.ok),
// last the generation it held before, served whether a refused lease
// breaks LeasesNeverRefused.
func (m *machine) observed(o observation, ok map[int64]platformmodule.Files, last int64, served bool, who string) *problem {
	if !o.ok {
		if m.cfg.neverRefused && served {
			return bad(optNeverRefused, "%s was refused after a Reconcile had returned nil", who)
		}
		return nil
	}
	if p := shapeProblem(o.rec, who); p != nil {
		return p
	}
	if o.err1 != nil {
		return bad(prop2, "%s leased generation %d, whose directory %s is absent or unreadable: %v", who, o.rec.Generation, o.rec.Dir, o.err1)
	}
	if o.changed != "" {
		return bad(prop1, "%s leased generation %d, whose directory %s changed while leased: it %s", who, o.rec.Generation, o.rec.Dir, o.changed)
	}
	if o.err2 != nil {
		return bad(prop1, "%s leased generation %d, whose directory %s went while leased: %v", who, o.rec.Generation, o.rec.Dir, o.err2)
	}
	if !sameFiles(o.first, o.second) {
		return bad(prop1, "%s leased generation %d, whose directory %s changed while leased: %s", who, o.rec.Generation, o.rec.Dir, diff(o.second, o.first))
	}
	if p := m.recordProblem(o.rec, ok, o.first, who); p != nil {
		return p
	}
	if o.renderErr != nil {
		return bad(prop2, "%s leased generation %d and rendered it with the kernel, which failed while its directory %s held the record's files: %v", who, o.rec.Generation, o.rec.Dir, o.renderErr)
	}
	if o.rec.Generation < last {
		return bad(prop3, "the store held generation %d, and %s leased generation %d", last, who, o.rec.Generation)
	}
	return nil
}

// An opResult is what a Reconcile or Delete returned, and what the
// renders that ran meanwhile saw.
type opResult struct {
	err     error
	obs     []observation // what the renders in a loop saw
	through *throughRender
	early   *problem // a held directory found changed when Check released the leases while it ran
}

// op runs f (a Reconcile or a Delete) on a goroutine of its own while the
// readers r lease and read, and returns what f returned and what the
// readers saw. When f runs longer than releaseAfter, every lease held
// across steps is checked and released, and the render holding its lease
// through f releases it too, once it has rendered; when f runs past the
// bound of config.waitBound after that, the sequence fails.
func (m *machine) op(words, during string, r readers, f func(context.Context) error) *opResult {
	m.say("%s", words)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := &opResult{}
	store := m.store()
	if r.through {
		res.through = startThrough(store, r.withKernel, "a render holding its lease through "+during)
		o := res.through.o
		switch {
		case !o.ok:
			m.steps[len(m.steps)-1] += ", while a render's lease is refused"
		case res.through.rendering:
			m.steps[len(m.steps)-1] += fmt.Sprintf(", while a render with the kernel holds generation %d", o.rec.Generation)
		default:
			m.steps[len(m.steps)-1] += fmt.Sprintf(", while a render holds generation %d", o.rec.Generation)
		}
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	seen := map[string]bool{}
	for range r.loops {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				o := render(store, false)
				key := o.key()
				mu.Lock()
				if !seen[key] && len(res.obs) < maxObservations {
					seen[key] = true
					res.obs = append(res.obs, o)
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
		if len(m.held) > 0 || res.through.holding() {
			res.early = m.releaseWhileRunning(res.through)
			m.steps[len(m.steps)-1] += " (held leases released while it ran)"
		}
		hang, stopTimer := m.cfg.waitBound()
		defer stopTimer()
		select {
		case err = <-done:
		case <-hang:
			close(stop)
			res.through.end()
			p := bad("", "%s has not returned, waited %s after every lease was released", words, m.cfg.waitWords())
			p.cut = m.cfg.reclaimWait == 0
			m.failWith(p)
		}
	}
	close(stop)
	wg.Wait()
	if p, ok := err.(*panicError); ok {
		res.through.end()
		m.fail("", "%s panicked: %v", words, p.v)
	}
	res.err = err
	return res
}

// releaseWhileRunning checks the directory of every lease held across
// steps and of the render holding its lease through a Reconcile that has
// run long, as a Reconcile that waits for its readers needs, and returns
// the first that changed.
func (m *machine) releaseWhileRunning(through *throughRender) *problem {
	var first *problem
	for _, h := range m.held {
		if p := h.problem(); p != nil && first == nil {
			first = p
		}
	}
	if p := through.problem(); p != nil && first == nil {
		first = p
	}
	m.releaseAll()
	through.end()
	return first
}

// checkReaders checks what the readers of a Reconcile or Delete (during)
// saw: ok, last and served are what the store could hold, the generation
// it held and whether a lease could be refused, before it started. A
// render that held its lease through it is checked at the step boundary;
// what renders in a loop saw depends on the scheduler, and fails the
// sequence only once it has run.
func (m *machine) checkReaders(res *opResult, ok map[int64]platformmodule.Files, last int64, served bool, during string) {
	for _, o := range res.obs {
		if p := m.observed(o, ok, last, served, "a render during "+during); p != nil {
			m.deferProblem(p)
			break
		}
	}
	if res.early != nil {
		m.failWith(res.early)
	}
	t := res.through
	if t == nil {
		return
	}
	if t.holding() {
		if p := t.problem(); p != nil {
			t.end()
			m.failWith(p)
		}
	}
	t.end()
	if p := m.observed(t.o, ok, last, served, t.who); p != nil {
		m.failWith(p)
	}
}

// A throughRender is a render that leases before a Reconcile or Delete
// starts and holds its lease, and its directory open, until it returns,
// as a render slower than the Reconcile does; it may render with the
// kernel meanwhile.
type throughRender struct {
	who       string      // the render in words
	o         observation // what it saw when it leased, and what the kernel returned
	dir       *dirHandle
	release   func()
	rendering bool          // it renders with the kernel
	done      chan struct{} // closed once it has rendered
	renderErr error         // what the kernel returned; read once done is closed
	released  bool
}

// startThrough leases from store, opens and reads the directory and, when
// withKernel is set, starts rendering the record with the kernel.
func startThrough(store *platform.Store, withKernel bool, who string) *throughRender {
	rec, release, ok := store.Lease()
	t := &throughRender{who: who, o: observation{ok: ok, rec: rec}, release: release, done: make(chan struct{})}
	if ok {
		t.dir, t.o.err1 = openDir(rec.Dir)
		if t.o.err1 == nil {
			t.o.first, t.o.err1 = t.dir.read()
		}
		t.o.second, t.o.err2 = t.o.first, t.o.err1
	}
	if !withKernel || t.o.err1 != nil || !ok || shapeProblem(rec, "") != nil {
		close(t.done)
		return t
	}
	t.rendering, t.o.rendered = true, true
	go func() {
		defer close(t.done)
		t.renderErr = renderWithKernel(rec)
	}()
	return t
}

// holding reports whether t holds a readable directory still.
func (t *throughRender) holding() bool {
	return t != nil && !t.released && t.dir != nil && t.o.err1 == nil
}

// problem checks property 1 of the directory t holds.
func (t *throughRender) problem() *problem {
	if !t.holding() {
		return nil
	}
	return leaseProblem(t.who, t.o.rec, t.dir, t.o.first)
}

// end waits until t has rendered, closes its directory and releases its
// lease. It does nothing the second time.
func (t *throughRender) end() {
	if t == nil || t.released {
		return
	}
	<-t.done
	t.o.renderErr = t.renderErr
	if t.dir != nil {
		t.dir.close()
	}
	t.release()
	t.released = true
}

// key identifies what an observation saw, to remember each thing once.
func (o observation) key() string {
	if !o.ok {
		return "refused"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d\x00%s\x00%p\x00%v\x00%v\x00%v\x00%s\x00%t\x00%v\x00", o.rec.Generation, o.rec.Dir, o.rec.Platform, o.rec.Skew, o.err1, o.err2, o.changed, o.rendered, o.renderErr)
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
