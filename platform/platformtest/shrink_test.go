package platformtest

import (
	"slices"
	"testing"
)

// fakeRun runs a plan as a sequence that breaks property 1 when its last
// step is "break", a "keep" step comes before it, and every "reconcile"
// has its "delete": a reconcile or a delete left out alone makes it pass,
// as a delete and the reconcile after it do for rapid's shrinker. Each
// step is one step in words.
func fakeRun(runs *int) func(plan []step) outcome {
	return func(plan []step) outcome {
		*runs++
		count := map[string]int{}
		for i, s := range plan {
			count[s.action]++
			if s.action == "break" {
				if count["keep"] > 0 && count["reconcile"] == count["delete"] {
					return outcome{v: &violation{kind: prop1, steps: i + 1}, script: plan[:i+1]}
				}
				return outcome{script: plan}
			}
		}
		return outcome{script: plan}
	}
}

func fakeStep(action string, value int64) step {
	return step{action: action, draws: []choice{{label: "module", value: value, lo: 0}}}
}

// TestShrinkerRemovesStepsThatGoTogether: the shrinker leaves out every
// step a failure does not need, two apart that only go together too,
// and lowers the choices of those it keeps, in a bounded number of runs.
func TestShrinkerRemovesStepsThatGoTogether(t *testing.T) {
	plan := []step{
		fakeStep("render", 1), fakeStep("reconcile", 3), fakeStep("render", 2), fakeStep("keep", 4),
		fakeStep("delete", 5), fakeStep("render", 0), fakeStep("break", 5), fakeStep("render", 1),
	}
	var runs int
	run := fakeRun(&runs)
	s := &shrinker{run: run, best: run(plan), budget: 1000}
	got := s.shrink()
	want := []step{fakeStep("keep", 0), fakeStep("break", 0)}
	if got.v == nil || got.v.kind != prop1 || !slices.EqualFunc(got.script, want, func(a, b step) bool { return scriptKey([]step{a}) == scriptKey([]step{b}) }) {
		t.Fatalf("shrank to %s, want %s", scriptKey(got.script), scriptKey(want))
	}
	if runs > 100 {
		t.Errorf("shrinking took %d runs, more than 100", runs)
	}
}

// TestShrinkerKeepsToItsBudget: the shrinker runs no more sequences than
// its budget, and keeps the shortest failure it found by then.
func TestShrinkerKeepsToItsBudget(t *testing.T) {
	plan := []step{fakeStep("render", 1), fakeStep("keep", 1), fakeStep("render", 1), fakeStep("break", 1)}
	for _, budget := range []int{0, 1, 3} {
		runs := 0
		run := fakeRun(&runs)
		start := run(plan)
		runs = 0
		s := &shrinker{run: run, best: start, budget: budget}
		got := s.shrink()
		if runs > budget {
			t.Errorf("budget %d: the shrinker ran %d sequences", budget, runs)
		}
		if got.v == nil || got.v.steps > start.v.steps {
			t.Errorf("budget %d: the shrinker returned %+v, not a failure at most as long as the %d steps it was given", budget, got.v, start.v.steps)
		}
	}
}
