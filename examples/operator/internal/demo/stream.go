package demo

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"

	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// A StepKind is what one step of the generation stream does.
type StepKind int

const (
	// StepNew publishes a new generation: a catalog added, bumped,
	// disabled or enabled again. The publisher reports it Published.
	StepNew StepKind = iota
	// StepRepeat publishes the current generation again with identical
	// files, as a re-reconcile does. The publisher reports it Unchanged.
	StepRepeat
	// StepRelabel publishes the current generation with changed labels:
	// the same generation, changed inputs. The publisher writes it beside
	// the leased directory, swaps it in, and reports it Changed.
	StepRelabel
	// StepBroken publishes a new generation whose module the kernel
	// refuses to build. The publisher reports BuildFailed and keeps the
	// current generation.
	StepBroken
	// StepStale publishes a generation older than the current one, as a
	// late reconcile does. The publisher refuses it as Stale.
	StepStale
)

var stepKindNames = [...]string{"new", "repeat", "relabel", "broken", "stale"}

// String returns the kind as a lower-case word.
func (k StepKind) String() string {
	if int(k) < len(stepKindNames) {
		return stepKindNames[k]
	}
	return fmt.Sprintf("StepKind(%d)", int(k))
}

// A Step is one publish the operator makes.
type Step struct {
	Kind       StepKind
	Generation int64
	Input      platformmodule.Input // what was generated (before any breakage)
	Files      platformmodule.Files // what is published
	Skew       kernel.SkewPolicy

	// Change says in a few words what this step changes:
	// "add example.com/catalogs/queue@v1 v1.0.0", "relabel rollout=wave-2".
	Change string

	// Breakage names the expected build failure of a StepBroken step.
	Breakage string
}

// catalogKind is a catalog the stream may put in a platform.
type catalogKind struct {
	path  string
	major int
	kinds []string
}

// catalogUniverse is every catalog the embedded instances use.
var catalogUniverse = []catalogKind{
	{"example.com/catalogs/web@v1", 1, []string{"Deployment", "Service"}},
	{"example.com/catalogs/db@v0", 0, []string{"Database"}},
	{"example.com/catalogs/batch@v2", 2, []string{"CronJob", "Job"}},
	{"example.com/catalogs/queue@v1", 1, []string{"Queue"}},
	{"example.com/catalogs/cache@v1", 1, []string{"Cache"}},
}

// carried is the state of one catalog a platform carries.
type carried struct {
	minor, patch int
	disabled     bool
}

// platformState is what a platform generation is made from.
type platformState struct {
	catalogs map[string]carried // by catalog path
	rollout  int                // the rollout label's wave
	skew     kernel.SkewPolicy
}

func (s platformState) clone() platformState {
	s.catalogs = maps.Clone(s.catalogs)
	return s
}

// input returns the generator input of s.
func (s platformState) input() platformmodule.Input {
	in := platformmodule.Input{
		Name: PlatformName,
		Labels: map[string]string{
			"team":                "platform",
			"example.com/rollout": fmt.Sprintf("wave-%d", s.rollout),
		},
	}
	for _, c := range catalogUniverse {
		st, ok := s.catalogs[c.path]
		if !ok {
			continue
		}
		in.Catalogs = append(in.Catalogs, platformmodule.Catalog{
			Path:     c.path,
			Version:  version(c.major, st.minor, st.patch),
			Kinds:    c.kinds,
			Disabled: st.disabled,
		})
	}
	return in
}

// PlatformName is the name of every platform the stream generates.
const PlatformName = "acme"

func version(major, minor, patch int) string {
	return fmt.Sprintf("v%d.%d.%d", major, minor, patch)
}

// breakages are the ways StepBroken spoils a generated module after
// generation (the generator refuses bad input, so the damage is done to its
// output), each with the failure the kernel is expected to report.
var breakages = []struct {
	name   string // the expected failure
	suffix func() string
}{
	{"syntax error: an unclosed brace in platform.cue", func() string { return "\ncatalogs: {\n" }},
	{"schema conflict: a catalog version that is not a string", func() string {
		return "\ncatalogs: \"example.com/catalogs/web@v1\": version: 7\n"
	}},
	{"rule violation: a label value with a space", func() string { return "\nlabels: \"example.com/zone\": \"eu west\"\n" }},
}

// openingKinds are the kinds of the stream's first steps, whatever the
// seed: every outcome the publisher has shows up early in every run.
var openingKinds = []StepKind{StepNew, StepNew, StepRepeat, StepRelabel, StepBroken, StepNew, StepStale}

// A Stream produces the platform generations an operator publishes over
// time: a deterministic function of its seed. A Stream is not safe for
// concurrent use.
type Stream struct {
	rng       *rand.Rand
	steps     int
	next      int64         // the next new generation
	cur       *Step         // the last step expected to set the store
	state     platformState // cur's state
	earlier   []int64       // generations cur superseded, for stale steps
	filesByID map[int64]platformmodule.Files
	breakNext int
}

// NewStream returns the stream of seed.
func NewStream(seed uint64) *Stream {
	return &Stream{
		rng:       rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		next:      1,
		filesByID: map[int64]platformmodule.Files{},
	}
}

// Default returns a generation that carries every catalog the embedded
// instances use, enabled, some older than the instances require: what
// a one-off render is rendered against.
func Default() Step {
	s := NewStream(0)
	return s.step(StepNew, 1, platformState{catalogs: map[string]carried{
		"example.com/catalogs/web@v1":   {minor: 3},
		"example.com/catalogs/db@v0":    {minor: 2},
		"example.com/catalogs/batch@v2": {minor: 1},
		"example.com/catalogs/queue@v1": {minor: 2},
		"example.com/catalogs/cache@v1": {minor: 0},
	}, rollout: 1}, "default: every catalog, enabled")
}

// Next returns the next step. It assumes every earlier step had its
// expected outcome: a broken or stale step leaves the current generation
// as it was.
func (s *Stream) Next() Step {
	kind := s.kind()
	s.steps++
	var st Step
	switch kind {
	case StepNew:
		st = s.newGeneration()
	case StepRepeat:
		st = *s.cur
		st.Kind, st.Change = StepRepeat, "repeat: the same generation, identical files"
	case StepRelabel:
		next := s.state.clone()
		next.rollout++
		st = s.step(StepRelabel, s.cur.Generation, next, fmt.Sprintf("relabel example.com/rollout=wave-%d", next.rollout))
		s.state, s.cur = next, &st
	case StepBroken:
		b := breakages[s.breakNext%len(breakages)]
		s.breakNext++
		st = s.step(StepBroken, s.next, s.state, "broken: "+b.name)
		s.next++
		files := maps.Clone(st.Files)
		files[platformmodule.PlatformFile] = append(slices.Clip(files[platformmodule.PlatformFile]), b.suffix()...)
		st.Files, st.Breakage = files, b.name
	case StepStale:
		g := s.earlier[s.rng.IntN(len(s.earlier))]
		st = *s.cur
		st.Kind, st.Generation = StepStale, g
		st.Files = s.filesByID[g]
		st.Change = fmt.Sprintf("stale: generation %d arrives after %d", g, s.cur.Generation)
	}
	return st
}

// kind chooses the next step's kind.
func (s *Stream) kind() StepKind {
	if s.cur == nil {
		return StepNew
	}
	if s.steps < len(openingKinds) {
		return openingKinds[s.steps]
	}
	switch n := s.rng.IntN(100); {
	case n < 55:
		return StepNew
	case n < 70:
		return StepRepeat
	case n < 80:
		return StepRelabel
	case n < 90:
		return StepBroken
	default:
		if len(s.earlier) == 0 {
			return StepNew
		}
		return StepStale
	}
}

// newGeneration returns a new generation with one catalog change.
func (s *Stream) newGeneration() Step {
	var next platformState
	var change string
	if s.cur == nil {
		next = platformState{catalogs: map[string]carried{
			"example.com/catalogs/web@v1":   {minor: 2},
			"example.com/catalogs/db@v0":    {minor: 2},
			"example.com/catalogs/batch@v2": {minor: 0},
		}, rollout: 1}
		change = "boot: web@v1 v1.2.0, db@v0 v0.2.0, batch@v2 v2.0.0"
	} else {
		next = s.state.clone()
		change = s.mutate(&next)
		if s.rng.IntN(10) < 4 {
			next.skew = kernel.SkewRefuse
		} else {
			next.skew = kernel.SkewWarn
		}
		if next.skew != s.state.skew {
			change += ", skew policy " + next.skew.String()
		}
	}
	st := s.step(StepNew, s.next, next, change)
	s.next++
	if s.cur != nil {
		s.earlier = append(s.earlier, s.cur.Generation)
		if len(s.earlier) > 8 {
			delete(s.filesByID, s.earlier[0])
			s.earlier = s.earlier[1:]
		}
	}
	s.state, s.cur = next, &st
	return st
}

// mutate applies one catalog change to p and describes it.
func (s *Stream) mutate(p *platformState) string {
	var missing, enabled, disabled, all []catalogKind
	for _, c := range catalogUniverse {
		st, ok := p.catalogs[c.path]
		switch {
		case !ok:
			missing = append(missing, c)
			continue
		case st.disabled:
			disabled = append(disabled, c)
		default:
			enabled = append(enabled, c)
		}
		all = append(all, c)
	}
	pick := func(cs []catalogKind) catalogKind { return cs[s.rng.IntN(len(cs))] }
	early := s.steps < 2*len(openingKinds)
	for {
		switch n := s.rng.IntN(10); {
		case (n < 4 || early) && len(missing) > 0:
			c := pick(missing)
			p.catalogs[c.path] = carried{}
			return "add " + c.path + " " + version(c.major, 0, 0)
		case n < 8:
			c := pick(all)
			st := p.catalogs[c.path]
			from := version(c.major, st.minor, st.patch)
			if s.rng.IntN(2) == 0 {
				st.minor, st.patch = st.minor+1, 0
			} else {
				st.patch++
			}
			p.catalogs[c.path] = st
			return "bump " + c.path + " " + from + " -> " + version(c.major, st.minor, st.patch)
		case n < 9 && len(enabled) > 1:
			c := pick(enabled)
			if strings.HasPrefix(c.path, "example.com/catalogs/web@") {
				continue // every instance needs web: keep it
			}
			st := p.catalogs[c.path]
			st.disabled = true
			p.catalogs[c.path] = st
			return "disable " + c.path
		case n >= 9 && len(disabled) > 0:
			c := pick(disabled)
			st := p.catalogs[c.path]
			st.disabled = false
			p.catalogs[c.path] = st
			return "enable " + c.path
		}
	}
}

// step generates the files of state for generation.
func (s *Stream) step(kind StepKind, generation int64, state platformState, change string) Step {
	in := state.input()
	files, err := platformmodule.Generate(in)
	if err != nil {
		// The stream's inputs are valid by construction.
		panic(fmt.Sprintf("demo: generating generation %d: %v", generation, err))
	}
	if kind != StepBroken {
		s.filesByID[generation] = files
	}
	return Step{Kind: kind, Generation: generation, Input: in, Files: files, Skew: state.skew, Change: change}
}
