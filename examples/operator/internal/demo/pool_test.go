package demo

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
)

func TestPoolClassifiesRenders(t *testing.T) {
	warn := platform.Generated{Generation: 1, Skew: kernel.SkewWarn}
	refuse := platform.Generated{Generation: 1, Skew: kernel.SkewRefuse}
	skew := &kernel.SkewError{Path: "example.com/catalogs/web@v1", InstanceVersion: "v1.3.0", PlatformVersion: "v1.2.0"}
	catalog := &kernel.CatalogError{Path: "example.com/catalogs/queue@v1", Rule: "is not carried by the platform"}
	warned := kernel.RenderOutput{Diagnostics: []kernel.Diagnostic{{Severity: "warning"}}}
	for _, tc := range []struct {
		name string
		g    platform.Generated
		out  kernel.RenderOutput
		err  error
		want RenderCounts
	}{
		{"ok", warn, kernel.RenderOutput{}, nil, RenderCounts{Total: 1, OK: 1}},
		{"ok with a skew warning", warn, warned, nil, RenderCounts{Total: 1, OK: 1, SkewWarned: 1}},
		{"skew refused under Refuse", refuse, kernel.RenderOutput{}, errors.Join(skew, skew), RenderCounts{Total: 1, SkewRefused: 1}},
		{"skew refused under Warn is a failure", warn, kernel.RenderOutput{}, skew, RenderCounts{Total: 1, Failed: 1}},
		{"catalog refused", warn, kernel.RenderOutput{}, fmt.Errorf("render: %w", catalog), RenderCounts{Total: 1, CatalogRefused: 1}},
		{"cancelled", warn, kernel.RenderOutput{}, &kernel.Error{Op: "render", Err: context.Canceled}, RenderCounts{Total: 1, Cancelled: 1}},
		{"anything else fails", warn, kernel.RenderOutput{}, errors.New("boom\nsecond line"), RenderCounts{Total: 1, Failed: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Pool{}
			p.record(tc.g, digest{}, Instance{Name: "shop"}, tc.out, tc.err, time.Millisecond)
			counts, latency, failures := p.Results()
			if counts != tc.want {
				t.Errorf("counts %+v, want %+v", counts, tc.want)
			}
			if want := tc.want.Total - tc.want.Cancelled; latency.Count() != uint64(want) {
				t.Errorf("%d latencies recorded, want %d", latency.Count(), want)
			}
			if len(failures) != tc.want.Failed {
				t.Errorf("failures %q, want %d", failures, tc.want.Failed)
			}
			if tc.want.Failed > 0 && failures[0] != "generation 1, instance shop: "+firstLine(tc.err.Error()) {
				t.Errorf("failure %q does not name the generation, the instance and the error's first line", failures[0])
			}
		})
	}
}

func firstLine(s string) string {
	for i, c := range s {
		if c == '\n' {
			return s[:i]
		}
	}
	return s
}

func TestPoolCatchesAnInconsistentRender(t *testing.T) {
	g := platform.Generated{Generation: 3}
	shop := Instance{Name: "shop"}
	out := func(name string) kernel.RenderOutput {
		return kernel.RenderOutput{Instance: "shop", Resources: []kernel.Resource{{Component: "web", Kind: "Deployment", Name: name}}}
	}
	p := &Pool{}
	p.record(g, digest{1}, shop, out("shop-web"), nil, time.Millisecond)
	p.record(g, digest{1}, shop, out("shop-web"), nil, time.Millisecond)
	p.record(g, digest{2}, shop, out("shop-other"), nil, time.Millisecond) // other files: no comparison
	if counts, _, _ := p.Results(); counts.Inconsistent != 0 {
		t.Fatalf("consistent renders counted inconsistent: %+v", counts)
	}
	p.record(g, digest{1}, shop, out("shop-other"), nil, time.Millisecond)
	p.record(g, digest{1}, shop, kernel.RenderOutput{}, errors.New("refused"), time.Millisecond)
	counts, _, failures := p.Results()
	if counts.Inconsistent != 2 || len(failures) != 3 { // and the error, a failure of its own
		t.Errorf("counts %+v, failures %q: want 2 inconsistent renders reported", counts, failures)
	}
}

func TestConsistencyMemoryIsBounded(t *testing.T) {
	var c consistency
	for g := range int64(10 * maxRemembered) {
		c.check(renderKey{generation: g, instance: "shop"}, digest{})
	}
	if len(c.seen) > maxRemembered+1 {
		t.Errorf("remembers %d outcomes, want at most %d", len(c.seen), maxRemembered+1)
	}
}
