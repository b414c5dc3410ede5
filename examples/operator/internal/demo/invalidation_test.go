package demo

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"leasekit.dev/publish"
)

// A run reports, for each publish, how many of the embedded instances'
// renders it invalidated: as many as the instances for which what the
// render reads of the platform (name, labels, skew policy, and the
// catalogs it requires) changed, which this test works out from the
// stream's own steps; none for a publish that left the record as it was.
func TestRunCountsWhatEachPublishInvalidated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const seed, n = 42, 24
		sum, err := Run(t.Context(), Config{
			Dir: filepath.Join(t.TempDir(), "platform"), Generations: n, Seed: seed, Renders: 2,
			PublishEvery: 20 * time.Millisecond, NoSync: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		if !sum.OK() {
			t.Fatalf("the run broke a promise: %+v", sum)
		}
		v := sum.Invalidation
		if len(v.PerPublish) != n || v.Publishes != n-1 || v.Instances != len(Instances()) {
			t.Fatalf("invalidation %+v: want every one of %d publishes listed", v, n)
		}
		// reads returns what a render of each instance reads of in under
		// skew, as the issue words it.
		reads := func(in platformmodule.Input, skew kernel.SkewPolicy) []string {
			var out []string
			for _, inst := range Instances() {
				paths, _ := kernel.ReadsOf(inst.Files).Catalogs()
				s := fmt.Sprintf("%s %s %v %v", in.Name, in.Type, in.Labels, skew)
				for _, path := range paths {
					i := slices.IndexFunc(in.Catalogs, func(c platformmodule.Catalog) bool { return c.Path == path })
					if i < 0 {
						s += " " + path + " absent"
						continue
					}
					s += fmt.Sprintf(" %+v", in.Catalogs[i])
				}
				out = append(out, s)
			}
			return out
		}
		stream := NewStream(seed)
		var current []string
		invalidated, valid := 0, 0
		for i, pi := range v.PerPublish {
			st := stream.Next()
			if pi.Generation != st.Generation || pi.Change != st.Change || pi.Outcome != wantOutcome[st.Kind].String() {
				t.Fatalf("publish %d: %+v, want step %+v", i, pi, st)
			}
			want := 0
			if pi.Outcome == publish.Published.String() || pi.Outcome == publish.Changed.String() {
				next := reads(st.Input, st.Skew)
				for j := range next {
					if current == nil || current[j] != next[j] {
						want++
					}
				}
				current = next
			}
			if pi.Invalidated != want || pi.Invalidated+pi.Valid != v.Instances {
				t.Errorf("publish %d (%s): %d invalidated, %d valid; want %d invalidated of %d", i, st.Change, pi.Invalidated, pi.Valid, want, v.Instances)
			}
			if i > 0 {
				invalidated += pi.Invalidated
				valid += pi.Valid
			}
		}
		if v.Invalidated != invalidated || v.Valid != valid || invalidated == 0 || valid == 0 {
			t.Errorf("invalidation totals %d and %d, the publishes' %d and %d", v.Invalidated, v.Valid, invalidated, valid)
		}
	})
}
