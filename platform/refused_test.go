package platform_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/publish"
)

// A module the kernel refuses for its content, past a limit or holding a
// file it may not read, is a failed build like one with a problem in
// it: the outcome is BuildFailed, it is counted, the current record and
// its directory stay, and the error names the file relative to the
// generation's directory.
func TestContentRefusalIsAFailedBuild(t *testing.T) {
	deep := "package platform\n\nx: " + strings.Repeat("a: ", 101) /* past the default Limits.MaxDepth, 100 */ + "1\n"
	for _, tc := range []struct {
		name  string
		file  string
		data  string
		check func(error) bool
	}{
		{"past MaxDepth", "overlay.cue", deep, func(err error) bool {
			le, ok := errors.AsType[*kernel.LimitError](err)
			return ok && le.Limit == "MaxDepth" && le.File == "overlay.cue"
		}},
		{"vendored packages", "cue.mod/pkg/example.com/x/x.cue", "package x\n", func(err error) bool {
			fe, ok := errors.AsType[*kernel.FileError](err)
			return ok && fe.File == "cue.mod/pkg"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var outcomes []publish.Outcome
			p := newBooted(t, platform.PublisherOptions{OnPublish: func(ev platform.PublishEvent) {
				mu.Lock()
				outcomes = append(outcomes, ev.Outcome)
				mu.Unlock()
			}})
			ctx := context.Background()
			rec, err := p.Publish(ctx, 1, moduletest.Variant(0), 0)
			if err != nil {
				t.Fatal(err)
			}
			files := moduletest.Variant(1)
			files[tc.file] = []byte(tc.data)
			_, err = p.Publish(ctx, 2, files, 0)
			if !tc.check(err) {
				t.Fatalf("Publish: %v, want the refusal naming the file relative to the module", err)
			}
			if n := strings.Count(err.Error(), p.Layout().Root); n != 1 {
				t.Errorf("the error names the platform directory %d times, want once (the module's): %v", n, err)
			}
			mu.Lock()
			got := slices.Clone(outcomes)
			mu.Unlock()
			if !slices.Equal(got, []publish.Outcome{publish.Published, publish.BuildFailed}) {
				t.Fatalf("outcomes %v, want [published build-failed]", got)
			}
			if st := p.Stats(); st.FailedBuilds != 1 || st.LastError == nil {
				t.Fatalf("stats %+v, want one failed build", st)
			}
			if cur, _ := p.Store().Generated(); cur != rec {
				t.Fatalf("after the refusal the store holds %+v, want %+v", cur, rec)
			}
			checkTree(t, rec.Dir, moduletest.Variant(0))
			if g := generations(t, p); !slices.Equal(g, []int64{1}) {
				t.Fatalf("Generations() = %v, want [1]", g)
			}
			// Other files of the same generation build.
			if _, err := p.Publish(ctx, 2, moduletest.Variant(1), 0); err != nil {
				t.Fatal(err)
			}
		})
	}
}
