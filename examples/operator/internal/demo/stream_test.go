package demo

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"testing"

	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/platform/kernel"
)

func TestStreamIsAFunctionOfItsSeed(t *testing.T) {
	for _, seed := range []uint64{0, 1, 42} {
		a, b := NewStream(seed), NewStream(seed)
		for i := range 200 {
			x, y := a.Next(), b.Next()
			if x.Kind != y.Kind || x.Generation != y.Generation || x.Change != y.Change || x.Skew != y.Skew ||
				!maps.EqualFunc(x.Files, y.Files, bytes.Equal) {
				t.Fatalf("seed %d, step %d: %+v and %+v differ", seed, i, x, y)
			}
		}
	}
	a, b := NewStream(1), NewStream(2)
	same := true
	for range 50 {
		if a.Next().Change != b.Next().Change {
			same = false
		}
	}
	if same {
		t.Error("seeds 1 and 2 gave the same 50 steps")
	}
}

func TestStreamOpensWithEveryKind(t *testing.T) {
	for seed := range uint64(20) {
		s := NewStream(seed)
		seen := map[StepKind]bool{}
		for range len(openingKinds) {
			seen[s.Next().Kind] = true
		}
		for k := range wantOutcome {
			if !seen[k] {
				t.Errorf("seed %d: no %v step in the first %d", seed, k, len(openingKinds))
			}
		}
	}
}

// TestStreamStepsAreWhatTheySay builds every step's files with the kernel:
// a broken step fails with positions, every other builds; generations
// advance as each kind says.
func TestStreamStepsAreWhatTheySay(t *testing.T) {
	k := kernel.New()
	s := NewStream(3)
	var current int64
	broken := map[string]bool{}
	for i := 0; i < 40 || len(broken) < len(breakages) && i < 300; i++ {
		st := s.Next()
		dir := t.TempDir()
		dirtree.MustWrite(t, dir, st.Files)
		_, err := k.BuildPlatform(context.Background(), dir)
		switch st.Kind {
		case StepBroken:
			var kerr *kernel.Error
			if !errors.As(err, &kerr) || len(kerr.Problems) == 0 || len(kerr.Problems[0].Positions) == 0 {
				t.Fatalf("step %d (%s): build error %v, want a *kernel.Error with positions", i, st.Change, err)
			}
			if st.Generation <= current || st.Breakage == "" {
				t.Fatalf("step %d: broken generation %d after %d, breakage %q", i, st.Generation, current, st.Breakage)
			}
			broken[st.Breakage] = true
		case StepNew:
			if err != nil {
				t.Fatalf("step %d (%s): %v", i, st.Change, err)
			}
			if st.Generation <= current {
				t.Fatalf("step %d: new generation %d after %d", i, st.Generation, current)
			}
			current = st.Generation
		case StepRepeat, StepRelabel:
			if err != nil {
				t.Fatalf("step %d (%s): %v", i, st.Change, err)
			}
			if st.Generation != current {
				t.Fatalf("step %d: %v of generation %d, current %d", i, st.Kind, st.Generation, current)
			}
		case StepStale:
			if err != nil {
				t.Fatalf("step %d (%s): %v", i, st.Change, err)
			}
			if st.Generation >= current {
				t.Fatalf("step %d: stale generation %d, current %d", i, st.Generation, current)
			}
		}
	}
	if len(broken) != len(breakages) {
		t.Errorf("300 steps broke the module %d ways, want all %d: %v", len(broken), len(breakages), broken)
	}
}

func TestDefaultCarriesEveryCatalog(t *testing.T) {
	def := Default()
	if len(def.Input.Catalogs) != len(catalogUniverse) {
		t.Fatalf("default carries %d catalogs, want %d", len(def.Input.Catalogs), len(catalogUniverse))
	}
	for _, c := range def.Input.Catalogs {
		if c.Disabled {
			t.Errorf("default disables %s", c.Path)
		}
	}
}
