package platform_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"leasekit.dev/publish"
	"pgregory.net/rapid"
)

// modelLease is one lease the model took: the generation it holds and the
// files its directory must hold until it is released.
type modelLease struct {
	gen      int64
	dir      string
	files    platformmodule.Files
	release  func()
	released bool
}

// TestModelLeasedGenerationIsNeverPrunedOrChanged drives a Publisher with
// random publishes (new generation, identical re-publish, changed current
// generation, stale, failing build), leases, releases (some twice),
// forgets, reclaim steps and restarts, against a plain model checked after
// every step: each leased generation's directory exists with exactly the
// files it was published with; Root holds only the current, leased and
// just-released generations; after a Publish, Forget or reclaim only the
// current and leased ones; and once nothing is leased a reclaim leaves
// exactly the current generation.
func TestModelLeasedGenerationIsNeverPrunedOrChanged(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		root := filepath.Join(dirtree.TempDir(t), "platform")
		ctx := context.Background()
		newPublisher := func() *platform.Publisher {
			p := platform.NewPublisher(root, platform.PublisherOptions{NoSync: true})
			if err := p.Boot(); err != nil {
				t.Fatal(err)
			}
			return p
		}
		p := newPublisher()

		var (
			cur      int64                // the model: the current generation, 0 for none,
			curFiles platformmodule.Files // its files,
			curSkew  kernel.SkewPolicy    // its skew,
			curDir   string               // its directory,
			leases   []*modelLease
			linger   = map[int64]bool{} // released generations not yet pruned
			builds   int                // successful publishes that wrote and built
		)
		outstanding := func() map[int64]int {
			n := map[int64]int{}
			for _, l := range leases {
				if !l.released {
					n[l.gen]++
				}
			}
			return n
		}
		pruned := func() { clear(linger) }
		publishGen := func(gen int64, files platformmodule.Files, skew kernel.SkewPolicy, pctx context.Context) (platform.Generated, error) {
			return p.Publish(pctx, gen, files, skew)
		}

		t.Repeat(map[string]func(*rapid.T){
			"publish new generation": func(t *rapid.T) {
				gen := cur + rapid.Int64Range(1, 2).Draw(t, "step")
				files := moduletest.Variant(rapid.IntRange(0, 3).Draw(t, "variant"))
				skew := kernel.SkewPolicy(rapid.IntRange(0, 1).Draw(t, "skew"))
				rec, err := publishGen(gen, files, skew, ctx)
				if err != nil {
					t.Fatalf("Publish(%d): %v", gen, err)
				}
				if rec.Generation != gen || !inGeneration(rec, root) || rec.Skew != skew || rec.Platform == nil || rec.Identity.Key != gen {
					t.Fatalf("Publish(%d) = %+v", gen, rec)
				}
				cur, curFiles, curSkew, curDir = gen, files, skew, rec.Dir
				builds++
				pruned()
			},
			"publish same files": func(t *rapid.T) {
				if cur == 0 {
					t.Skip("nothing held")
				}
				before := p.Stats().Publishes
				// The skew may change: the record does, the disk not.
				skew := kernel.SkewPolicy(rapid.IntRange(0, 1).Draw(t, "skew"))
				rec, err := publishGen(cur, maps.Clone(curFiles), skew, ctx)
				if err != nil || rec.Generation != cur || rec.Skew != skew || rec.Dir != curDir {
					t.Fatalf("identical re-publish of %d with skew %v = %+v, %v", cur, skew, rec, err)
				}
				if after := p.Stats().Publishes; after != before {
					t.Fatalf("an identical re-publish wrote: publishes %d -> %d", before, after)
				}
				curSkew = skew
			},
			"publish changed files": func(t *rapid.T) {
				if cur == 0 {
					t.Skip("nothing held")
				}
				files := moduletest.Variant(rapid.IntRange(0, 3).Draw(t, "variant"))
				if sameFiles(files, curFiles) {
					t.Skip("same files")
				}
				// A changed module is written beside the current one, leased
				// or not: it never waits for a render.
				rec, err := publishGen(cur, files, curSkew, ctx)
				if err != nil {
					t.Fatalf("rewrite of %d: %v", cur, err)
				}
				if rec.Generation != cur || rec.Dir == curDir || !inGeneration(rec, root) {
					t.Fatalf("rewrite of %d = %+v, want a new directory of generation %d beside %s", cur, rec, cur, curDir)
				}
				curDir = rec.Dir
				curFiles = files
				builds++
				pruned()
			},
			"publish stale": func(t *rapid.T) {
				if cur < 2 {
					t.Skip("no older generation")
				}
				gen := rapid.Int64Range(1, cur-1).Draw(t, "gen")
				_, err := publishGen(gen, moduletest.Variant(0), 0, ctx)
				var se *publish.StaleError[int64]
				if !errors.As(err, &se) || !errors.Is(err, publish.ErrStale) || se.Key != gen || se.Current != cur {
					t.Fatalf("Publish(%d) with %d current: %v, want a StaleError", gen, cur, err)
				}
			},
			"publish failing build": func(t *rapid.T) {
				gen := cur + 1
				if cur > 0 && rapid.Bool().Draw(t, "same generation") {
					gen = cur
				}
				_, err := publishGen(gen, brokenFiles(t, rapid.Bool().Draw(t, "syntax")), 0, ctx)
				var ke *kernel.Error
				if !errors.As(err, &ke) || len(ke.Problems) == 0 || len(ke.Problems[0].Positions) == 0 {
					t.Fatalf("Publish(%d) of a broken module: %v, want a kernel.Error with positions", gen, err)
				}
				pruned()
			},
			"lease": func(t *rapid.T) {
				rec, release, ok := p.Store().Lease()
				if ok != (cur != 0) || rec.Generation != cur || rec.Dir != curDir {
					t.Fatalf("Lease() = %d, %v; model holds %d", rec.Generation, ok, cur)
				}
				if !ok {
					release() // a no-op
					return
				}
				if rec.Skew != curSkew {
					t.Fatalf("leased skew %v, want %v", rec.Skew, curSkew)
				}
				leases = append(leases, &modelLease{gen: cur, dir: curDir, files: curFiles, release: release})
			},
			"release": func(t *rapid.T) {
				if len(leases) == 0 {
					t.Skip("no lease")
				}
				l := leases[rapid.IntRange(0, len(leases)-1).Draw(t, "lease")]
				l.release()
				if rapid.Bool().Draw(t, "twice") {
					l.release()
				}
				if !l.released && l.dir != curDir {
					linger[l.gen] = true
				}
				l.released = true
			},
			"forget": func(t *rapid.T) {
				p.Forget()
				cur, curFiles, curDir = 0, nil, ""
				pruned()
			},
			"reclaim": func(t *rapid.T) {
				for _, ev := range p.ReclaimNow() {
					if ev.Err != nil {
						t.Fatalf("reclaim: %v", ev.Err)
					}
				}
				pruned()
				if len(outstanding()) > 0 {
					return
				}
				want := []int64{}
				if cur != 0 {
					want = []int64{cur}
				}
				if got := generations(t, p); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
					t.Fatalf("nothing leased, after reclaim: Generations() = %v, want %v", got, want)
				}
				if got := strayEntries(t, root); len(got) != 0 {
					t.Fatalf("nothing leased, after reclaim: Root holds %v besides %v", got, want)
				}
			},
			"restart": func(t *rapid.T) {
				if len(outstanding()) > 0 {
					t.Skip("a restart ends the process and its leases")
				}
				p = newPublisher()
				if got := strayEntries(t, root); len(got) != 0 || len(generations(t, p)) != 0 {
					t.Fatalf("after Boot, Root holds %v", dirtree.MustNames(t, root))
				}
				cur, curFiles, curDir = 0, nil, ""
				leases = nil
				builds = 0
				pruned()
			},
			"": func(t *rapid.T) {
				if g := p.Store().Generation(); g != cur {
					t.Fatalf("Generation() = %d, model %d", g, cur)
				}
				counts := outstanding()
				for _, l := range leases {
					if !l.released {
						checkTree(t, l.dir, l.files)
					}
				}
				if cur != 0 {
					checkTree(t, curDir, curFiles)
				}
				if got, want := p.Store().Leased(), slices.Sorted(maps.Keys(counts)); !slices.Equal(got, want) {
					t.Fatalf("Leased() = %v, want %v", got, want)
				}
				st := p.Stats()
				if st.Publishes != uint64(builds) {
					t.Fatalf("Stats().Publishes = %d, model %d", st.Publishes, builds)
				}
				if !maps.Equal(leaseCounts(st), counts) {
					t.Fatalf("Stats().Leases = %v, want %v", leaseCounts(st), counts)
				}
				for _, g := range onDisk(st) {
					if g != cur && counts[g] == 0 && !linger[g] {
						t.Fatalf("generation %d is on disk: not current (%d), not leased %v, not just released", g, cur, counts)
					}
				}
			},
		})
		for _, l := range leases {
			l.release()
		}
	})
}

// inGeneration reports whether rec's directory is gen-<n> or
// gen-<n>-<digest prefix> under root.
func inGeneration(rec platform.Generated, root string) bool {
	if filepath.Dir(rec.Dir) != root {
		return false
	}
	plain := fmt.Sprintf("gen-%d", rec.Generation)
	name := filepath.Base(rec.Dir)
	suffix, ok := strings.CutPrefix(name, plain+"-")
	return name == plain || ok && len(suffix) >= 12 && strings.HasPrefix(rec.Identity.Digest.String(), suffix)
}
