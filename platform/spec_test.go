package platform_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"leasekit.dev/dirlife"
	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/kernel"
)

// TestSpecStore checks the specification of Store sentence by sentence;
// each subtest is named by the sentence it checks.
func TestSpecStore(t *testing.T) {
	plat := &kernel.Platform{Name: "acme"}
	rec := func(g int64) platform.Generated {
		return platform.Generated{Generation: g, Dir: filepath.Join("root", "gen-x"), Platform: plat, Skew: kernel.SkewRefuse}
	}
	tests := []struct {
		sentence string
		check    func(t *testing.T, s *platform.Store)
	}{
		{"Generated returns the current generated-module record and true, or the zero record and false when none is held", func(t *testing.T, s *platform.Store) {
			if g, ok := s.Generated(); ok || g != (platform.Generated{}) {
				t.Fatalf("empty store: Generated() = %+v, %v", g, ok)
			}
			s.SetGenerated(rec(3))
			if g, ok := s.Generated(); !ok || g != rec(3) {
				t.Fatalf("Generated() = %+v, %v, want %+v", g, ok, rec(3))
			}
		}},
		{"Generation returns the .metadata.generation the held platform was built for, or 0 when no platform is held", func(t *testing.T, s *platform.Store) {
			if g := s.Generation(); g != 0 {
				t.Fatalf("empty store: Generation() = %d", g)
			}
			s.SetGenerated(rec(7))
			if g := s.Generation(); g != 7 {
				t.Fatalf("Generation() = %d, want 7", g)
			}
		}},
		{"Lease returns the current record and a release function, holding the record's generation leased until release is called", func(t *testing.T, s *platform.Store) {
			s.SetGenerated(rec(2))
			g, release, ok := s.Lease()
			if !ok || g != rec(2) {
				t.Fatalf("Lease() = %+v, %v", g, ok)
			}
			if l := s.Leased(); !slices.Equal(l, []int64{2}) {
				t.Fatalf("Leased() = %v while leased, want [2]", l)
			}
			release()
			if l := s.Leased(); len(l) != 0 {
				t.Fatalf("Leased() = %v after release, want none", l)
			}
		}},
		{"it returns ok false (a zero record and a no-op release) when no platform is held", func(t *testing.T, s *platform.Store) {
			g, release, ok := s.Lease()
			if ok || g != (platform.Generated{}) || release == nil {
				t.Fatalf("empty store: Lease() = %+v, release nil %v, %v", g, release == nil, ok)
			}
			release()
			release()
			if l := s.Leased(); len(l) != 0 {
				t.Fatalf("Leased() = %v", l)
			}
		}},
		{"Release is idempotent", func(t *testing.T, s *platform.Store) {
			s.SetGenerated(rec(1))
			_, r1, _ := s.Lease()
			_, r2, _ := s.Lease()
			r1()
			r1() // must not release r2's lease
			if l := s.Leased(); !slices.Equal(l, []int64{1}) {
				t.Fatalf("after releasing one of two leases twice, Leased() = %v, want [1]", l)
			}
			r2()
			if l := s.Leased(); len(l) != 0 {
				t.Fatalf("Leased() = %v", l)
			}
		}},
		{"Leased returns the generations at least one render currently holds a lease on, in ascending order", func(t *testing.T, s *platform.Store) {
			var releases []func()
			for _, g := range []int64{9, 10, 11} {
				s.SetGenerated(rec(g))
				_, r, _ := s.Lease()
				releases = append(releases, r)
			}
			s.SetGenerated(rec(12))
			if l := s.Leased(); !slices.Equal(l, []int64{9, 10, 11}) {
				t.Fatalf("Leased() = %v, want [9 10 11]", l)
			}
			releases[1]()
			if l := s.Leased(); !slices.Equal(l, []int64{9, 11}) {
				t.Fatalf("Leased() = %v, want [9 11]", l)
			}
		}},
		{"Clear drops the held record so the store reports no platform held", func(t *testing.T, s *platform.Store) {
			s.SetGenerated(rec(4))
			s.Clear()
			if _, ok := s.Generated(); ok || s.Generation() != 0 {
				t.Fatal("a cleared store reports a platform")
			}
			if _, _, ok := s.Lease(); ok {
				t.Fatal("a cleared store granted a lease")
			}
		}},
		{"Leases outstanding on the dropped generation are kept", func(t *testing.T, s *platform.Store) {
			s.SetGenerated(rec(4))
			_, release, _ := s.Lease()
			s.Clear()
			if l := s.Leased(); !slices.Equal(l, []int64{4}) {
				t.Fatalf("Leased() = %v after Clear, want [4]", l)
			}
			release()
			if l := s.Leased(); len(l) != 0 {
				t.Fatalf("Leased() = %v", l)
			}
		}},
		{"SetGenerated records g as the current generated platform module, replacing any earlier record, and reports g.Generation from Generation", func(t *testing.T, s *platform.Store) {
			s.SetGenerated(rec(5))
			s.SetGenerated(rec(6))
			if g, _ := s.Generated(); g != rec(6) || s.Generation() != 6 {
				t.Fatalf("Generated() = %+v", g)
			}
		}},
		{"Leases on the replaced generation are unaffected", func(t *testing.T, s *platform.Store) {
			s.SetGenerated(rec(5))
			g, release, _ := s.Lease()
			s.SetGenerated(rec(6))
			if g != rec(5) {
				t.Fatalf("the lease's record changed to %+v", g)
			}
			if l := s.Leased(); !slices.Equal(l, []int64{5}) {
				t.Fatalf("Leased() = %v, want [5]", l)
			}
			release()
		}},
		{"a record with generation below 1 is refused: it could not be told from an empty store", func(t *testing.T, s *platform.Store) {
			for _, g := range []int64{0, -1} {
				func() {
					defer func() {
						if recover() == nil {
							t.Errorf("SetGenerated(generation %d) did not panic", g)
						}
					}()
					s.SetGenerated(rec(g))
				}()
			}
			if _, ok := s.Generated(); ok {
				t.Fatal("a refused record is held")
			}
		}},
		{"Safe for concurrent callers", func(t *testing.T, s *platform.Store) {
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Go(func() {
					for i := range 500 {
						if w == 0 {
							s.SetGenerated(rec(int64(i + 1)))
							continue
						}
						if g, release, ok := s.Lease(); ok {
							if g.Generation < 1 || !slices.Contains(s.Leased(), g.Generation) {
								t.Errorf("leased %d, not in Leased()", g.Generation)
							}
							release()
						}
						s.Generated()
					}
				})
			}
			wg.Wait()
			if l := s.Leased(); len(l) != 0 {
				t.Fatalf("Leased() = %v after every release", l)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.sentence, func(t *testing.T) {
			tt.check(t, platform.NewStore())
		})
	}
	t.Run("the zero value is ready", func(t *testing.T) {
		var s platform.Store
		s.SetGenerated(rec(1))
		if s.Generation() != 1 {
			t.Fatal("zero Store did not hold its record")
		}
	})
}

// TestSpecLayout checks the specification of Layout sentence by sentence.
func TestSpecLayout(t *testing.T) {
	files := moduletest.Variant(0)
	newLayout := func(t *testing.T) platform.Layout {
		return platform.Layout{Root: filepath.Join(t.TempDir(), "platform"), NoSync: true}
	}
	write := func(t *testing.T, l platform.Layout, gens ...int64) {
		t.Helper()
		for _, g := range gens {
			if _, err := l.Write(g, files); err != nil {
				t.Fatal(err)
			}
		}
	}
	tests := []struct {
		sentence string
		check    func(t *testing.T, l platform.Layout)
	}{
		{"Dir returns the directory a generation's module lives in, whether or not it exists", func(t *testing.T, l platform.Layout) {
			if d := l.Dir(12); d != filepath.Join(l.Root, "gen-12") {
				t.Fatalf("Dir(12) = %q", d)
			}
			if _, err := os.Stat(l.Dir(12)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("Dir created something: %v", err)
			}
		}},
		{"Generations lists the complete generation directories under Root, in ascending generation order", func(t *testing.T, l platform.Layout) {
			write(t, l, 10, 9, 100, 1)
			if g, err := l.Generations(); err != nil || !slices.Equal(g, []int64{1, 9, 10, 100}) {
				t.Fatalf("Generations() = %v, %v", g, err)
			}
		}},
		{"Staging and moved-aside entries are ignored", func(t *testing.T, l platform.Layout) {
			write(t, l, 3)
			for _, name := range []string{".stage-gen-4", ".old-gen-3", "gen-03", "gen-x"} {
				if err := os.Mkdir(filepath.Join(l.Root, name), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if g, err := l.Generations(); err != nil || !slices.Equal(g, []int64{3}) {
				t.Fatalf("Generations() = %v, %v", g, err)
			}
		}},
		{"Prune removes every entry under Root except the generation directories listed in keep: superseded generations, staging leftovers and moved-aside copies", func(t *testing.T, l platform.Layout) {
			write(t, l, 1, 2, 3)
			if err := os.Mkdir(filepath.Join(l.Root, ".stage-leftover"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := l.Prune(2, 7); err != nil {
				t.Fatal(err)
			}
			if g, _ := l.Generations(); !slices.Equal(g, []int64{2}) {
				t.Fatalf("Generations() = %v, want [2]", g)
			}
			// At the instant Prune returns: nothing is left to a
			// background removal.
			if names := dirtree.MustNames(t, l.Root); !slices.Equal(names, []string{"gen-2"}) {
				t.Fatalf("right after Prune, Root holds %v, want [gen-2]", names)
			}
			checkTree(t, l.Dir(2), files)
		}},
		{"A missing Root is not an error", func(t *testing.T, l platform.Layout) {
			if err := l.Prune(1); err != nil {
				t.Fatalf("Prune of a missing Root: %v", err)
			}
			if g, err := l.Generations(); err != nil || len(g) != 0 {
				t.Fatalf("Generations() of a missing Root = %v, %v", g, err)
			}
		}},
		{"Reset empties Root entirely and makes sure Root exists afterwards", func(t *testing.T, l platform.Layout) {
			if err := l.Reset(); err != nil {
				t.Fatal(err)
			}
			write(t, l, 1, 2)
			if err := l.Reset(); err != nil {
				t.Fatal(err)
			}
			if names := dirtree.MustNames(t, l.Root); len(names) != 0 {
				t.Fatalf("after Reset, Root holds %v", names)
			}
		}},
		{"Write materialises files as generation's module directory and returns its path", func(t *testing.T, l platform.Layout) {
			dir, err := l.Write(5, files)
			if err != nil || dir != l.Dir(5) {
				t.Fatalf("Write(5) = %q, %v", dir, err)
			}
			checkTree(t, dir, files)
			if _, err := kernel.New().BuildPlatform(context.Background(), dir); err != nil {
				t.Fatalf("the written module does not build: %v", err)
			}
		}},
		{"a failure at any point leaves never a generation directory", func(t *testing.T, l platform.Layout) {
			bad := moduletest.Variant(0)
			bad["../escape.cue"] = []byte("x: 1")
			_, err := l.Write(5, bad)
			var ne *dirlife.NameError
			if !errors.As(err, &ne) || ne.Name != "../escape.cue" {
				t.Fatalf("Write with an escaping name: %v, want a NameError naming it", err)
			}
			if g, _ := l.Generations(); len(g) != 0 {
				t.Fatalf("a failed Write left generations %v", g)
			}
		}},
		{"An existing directory for the same generation is moved aside before the swap and removed after it", func(t *testing.T, l platform.Layout) {
			write(t, l, 5)
			other := moduletest.Variant(1)
			if _, err := l.Write(5, other); err != nil {
				t.Fatal(err)
			}
			checkTree(t, l.Dir(5), other)
			if names := dirtree.MustNames(t, l.Root); !slices.Equal(names, []string{"gen-5"}) {
				t.Fatalf("right after the rewrite, Root holds %v, want [gen-5]: the replaced directory was left", names)
			}
		}},
		{"Write refuses a generation below 1, creating nothing", func(t *testing.T, l platform.Layout) {
			for _, g := range []int64{0, -3} {
				_, err := l.Write(g, files)
				var ge *platform.GenerationError
				if !errors.As(err, &ge) || ge.Generation != g || !errors.Is(err, platform.ErrInvalidGeneration) {
					t.Fatalf("Write(%d): %v, want a GenerationError", g, err)
				}
			}
			if _, err := os.Stat(l.Root); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a refused Write created Root: %v", err)
			}
		}},
		{"Write refuses an empty file set, creating nothing", func(t *testing.T, l platform.Layout) {
			for _, empty := range []map[string][]byte{nil, {}} {
				if _, err := l.Write(4, empty); !errors.Is(err, platform.ErrNoFiles) {
					t.Fatalf("Write(4, %v): %v, want ErrNoFiles", empty, err)
				}
			}
			if _, err := os.Stat(l.Root); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a refused Write created Root: %v", err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.sentence, func(t *testing.T) { tt.check(t, newLayout(t)) })
	}
}
