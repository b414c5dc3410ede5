package platformtest

import (
	"fmt"
	"strings"

	"pgregory.net/rapid"
)

// A step is one action of a sequence and the choices it drew, in the
// order it drew them: enough to run it again.
type step struct {
	action string
	draws  []choice
}

// A choice is one value a step drew, by what it chose, with the least
// value it could have drawn.
type choice struct {
	label     string
	value, lo int64
}

// A source is where a sequence's choices come from: rapid, while it
// generates sequences and shrinks them, or a step Check runs again.
type source interface {
	// draw returns a value in [lo, hi] for what label names.
	draw(label string, lo, hi int64) int64
	// skip ends a step that does not apply, before it changes anything.
	skip(why string)
}

// draw draws a value in [lo, hi] for label from m.src and records it
// with the step.
func (m *machine) draw(label string, lo, hi int64) int64 {
	v := m.src.draw(label, lo, hi)
	m.cur.draws = append(m.cur.draws, choice{label: label, value: v, lo: lo})
	return v
}

// drawBool draws a yes or no for label.
func (m *machine) drawBool(label string) bool { return m.draw(label, 0, 1) == 1 }

// skip ends the step, which does not apply, and leaves it out of the
// sequence.
func (m *machine) skip(why string) { m.src.skip(why) }

// rapidSource draws from rapid.
type rapidSource struct{ t *rapid.T }

func (s rapidSource) draw(label string, lo, hi int64) int64 {
	return rapid.Int64Range(lo, hi).Draw(s.t, label)
}

func (s rapidSource) skip(why string) { s.t.Skip(why) }

// replaySource gives a step the choices it drew when it last ran. A
// choice it did not draw then takes its least value, and one outside its
// range now (a lease that is no longer held) the nearest value in it.
type replaySource struct {
	plan step
	used []bool
}

func (s *replaySource) draw(label string, lo, hi int64) int64 {
	for i, c := range s.plan.draws {
		if c.label == label && !s.used[i] {
			s.used[i] = true
			return min(max(c.value, lo), hi)
		}
	}
	return lo
}

// skipped is what a step that does not apply panics with while Check
// runs a sequence again.
type skipped struct{}

func (s *replaySource) skip(string) { panic(skipped{}) }

// An outcome is how a sequence failed: its violation and the steps it
// ran, up to the one that broke the property.
type outcome struct {
	v      *violation
	script []step
}

// smaller reports whether o is a shorter failure than than: fewer steps
// in words, then fewer actions, then choices nearer their least values.
func (o *outcome) smaller(than *outcome) bool {
	switch {
	case o.v.steps != than.v.steps:
		return o.v.steps < than.v.steps
	case len(o.script) != len(than.script):
		return len(o.script) < len(than.script)
	}
	return weight(o.script) < weight(than.script)
}

// weight is how far the choices of script are from their least values.
func weight(script []step) int64 {
	var w int64
	for _, s := range script {
		for _, c := range s.draws {
			w += c.value - c.lo
		}
	}
	return w
}

// runRapid runs the sequence rapid draws on m and fails t at its first
// violation.
func runRapid(t *rapid.T, m *machine) {
	m.src = rapidSource{t}
	if v := catchViolation(m.start); v != nil {
		m.raise(t, v)
	}
	actions := m.actions()
	repeat := make(map[string]func(*rapid.T), len(actions)+1)
	for name, action := range actions {
		repeat[name] = func(*rapid.T) { m.act(name, action) }
	}
	repeat[""] = func(t *rapid.T) {
		if v := m.boundary(); v != nil {
			m.raise(t, v)
		}
	}
	t.Repeat(repeat)
}

// raise fails the sequence with v. rapid is told only the property v
// breaks, so that it takes every failure of that property for the same
// one and shrinks through them; Check keeps v and the steps that led to
// it for its report.
func (m *machine) raise(t *rapid.T, v *violation) {
	m.failure = &outcome{v: v, script: m.script}
	if m.reproducing {
		// Not the same words, so that rapid does not shrink (see check).
		t.Fatal("platformtest: again: " + v.kind)
	}
	t.Fatal("platformtest: " + v.kind)
}

// replay runs plan on a Root of its own: each step's action with the
// choices it drew (see replaySource), leaving out a step that does not
// apply now. It returns how the sequence failed, with the steps it ran,
// or an outcome with no violation when it passed.
func replay(cfg config, base string, newTarget func(root string) (Target, error), plan []step) outcome {
	m, err := newMachine(cfg, base, newTarget)
	if err != nil {
		return outcome{v: &violation{kind: "setup", msg: "platformtest: " + err.Error()}}
	}
	var v *violation
	func() {
		if v = catchViolation(m.start); v != nil {
			return
		}
		if v = m.boundary(); v != nil {
			return
		}
		actions := m.actions()
		for _, s := range plan {
			action, ok := actions[s.action]
			if !ok {
				continue
			}
			m.src = &replaySource{plan: s, used: make([]bool, len(s.draws))}
			if catchSkip(func() { m.act(s.action, action) }) {
				continue
			}
			if v = m.boundary(); v != nil {
				return
			}
		}
	}()
	if err := m.close(); err != nil && v == nil {
		v = m.violation(bad("", "closing the target at the end: %v", err))
	}
	return outcome{v: v, script: m.script}
}

// catchSkip calls f and reports whether it skipped its step.
func catchSkip(f func()) (skip bool) {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(skipped); !ok {
				panic(p)
			}
			skip = true
		}
	}()
	f()
	return false
}

// maxPairSteps is the longest sequence in which the shrinker tries to
// remove every two steps, not only two adjacent ones.
const maxPairSteps = 16

// A shrinker shortens a failing sequence by whole steps, where rapid
// shrinks the bits its choices were drawn from: it removes runs of
// adjacent steps, then any two steps together, then lowers each choice,
// and keeps a candidate that fails, when run on a fresh Root, with the
// same property and is smaller. Two steps that only go together (a
// delete and the reconcile after it) are a local minimum for rapid, not
// for it.
type shrinker struct {
	run    func(plan []step) outcome
	best   outcome
	runs   int // sequences run so far
	budget int // how many it may run
	tried  map[string]bool
}

// shrink shortens s.best until no candidate is smaller, or the budget is
// spent, and returns it.
func (s *shrinker) shrink() outcome {
	s.tried = map[string]bool{}
	for s.runs < s.budget {
		before := s.best
		s.removeRuns()
		s.removePairs()
		s.lowerChoices()
		if !s.best.smaller(&before) {
			break
		}
	}
	return s.best
}

// try runs plan and keeps it when it fails as s.best does and is
// smaller.
func (s *shrinker) try(plan []step) {
	key := scriptKey(plan)
	if s.runs >= s.budget || s.tried[key] {
		return
	}
	s.tried[key] = true
	s.runs++
	o := s.run(plan)
	if o.v != nil && o.v.kind == s.best.v.kind && o.smaller(&s.best) {
		s.best = o
	}
}

// removeRuns tries removing each run of adjacent steps, longest first:
// half the sequence, a quarter, and so on down to two steps and one.
func (s *shrinker) removeRuns() {
	var sizes []int
	for size := len(s.best.script) / 2; size > 2; size /= 2 {
		sizes = append(sizes, size)
	}
	sizes = append(sizes, 2, 1)
	for _, size := range sizes {
		for i := len(s.best.script) - size; i >= 0; i-- {
			if script := s.best.script; i+size <= len(script) {
				s.try(cut(script, i, i+size))
			}
		}
	}
}

// removePairs tries removing any two steps of a short sequence together.
func (s *shrinker) removePairs() {
	if len(s.best.script) > maxPairSteps {
		return
	}
	for j := len(s.best.script) - 1; j > 0; j-- {
		for i := j - 1; i >= 0; i-- {
			if script := s.best.script; j < len(script) {
				s.try(cut(cut(script, j, j+1), i, i+1))
			}
		}
	}
}

// lowerChoices tries each choice at its least value, then at one less.
func (s *shrinker) lowerChoices() {
	for i := 0; i < len(s.best.script); i++ {
		for k := 0; i < len(s.best.script) && k < len(s.best.script[i].draws); k++ {
			c := s.best.script[i].draws[k]
			if c.value == c.lo {
				continue
			}
			s.try(withChoice(s.best.script, i, k, c.lo))
			if c.value-1 > c.lo && i < len(s.best.script) && k < len(s.best.script[i].draws) && s.best.script[i].draws[k] == c {
				s.try(withChoice(s.best.script, i, k, c.value-1))
			}
		}
	}
}

// cut returns script without its steps [i, j).
func cut(script []step, i, j int) []step {
	out := make([]step, 0, len(script)-(j-i))
	out = append(out, script[:i]...)
	return append(out, script[j:]...)
}

// withChoice returns script with choice k of step i set to value.
func withChoice(script []step, i, k int, value int64) []step {
	out := append([]step(nil), script...)
	draws := append([]choice(nil), out[i].draws...)
	draws[k].value = value
	out[i].draws = draws
	return out
}

// scriptKey names a plan, to run each one once.
func scriptKey(plan []step) string {
	var b strings.Builder
	for _, s := range plan {
		b.WriteString(s.action)
		for _, c := range s.draws {
			fmt.Fprintf(&b, "\x00%s=%d", c.label, c.value)
		}
		b.WriteByte('\n')
	}
	return b.String()
}
