package publish_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
)

// TestRefusals checks that bad input is refused with an error naming it
// and leaves the current record, its directory and Root as they were.
func TestRefusals(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	p := newPublisher(t, root, publish.Options[int64, dirlife.Digest, int]{NoSync: true})
	ctx := context.Background()
	good := dirlife.Files{"a": []byte("1")}
	before, err := p.Publish(ctx, 2, good, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		key   int64
		files dirlife.Files
		is    error
	}{
		{"empty", 3, dirlife.Files{}, dirlife.ErrNoFiles},
		{"escaping name", 3, dirlife.Files{"../x": []byte("1")}, dirlife.ErrInvalidName},
		{"stale", 1, good, publish.ErrStale},
		{"failed build", 2, dirlife.Files{"bad": nil}, errBad},
		{"failed build of a new key", 3, dirlife.Files{"bad": nil}, errBad},
	} {
		_, err := p.Publish(ctx, tc.key, tc.files, 1)
		if !errors.Is(err, tc.is) {
			t.Errorf("%s: err %v, want %v", tc.name, err, tc.is)
		}
		if _, cur, _ := p.Slot().Get(); cur != before {
			t.Errorf("%s: current %+v, want %+v", tc.name, cur, before)
		}
		if got := onDisk(t, root); !slices.Equal(got, []string{"gen-2"}) {
			t.Errorf("%s: Root holds %v, want [gen-2]", tc.name, got)
		}
	}
	var se *publish.StaleError[int64]
	if _, err := p.Publish(ctx, 1, good, 0); !errors.As(err, &se) || se.Key != 1 || se.Current != 2 {
		t.Errorf("stale: err %v, want a StaleError naming 1 and 2", err)
	}
}

// floatCodec names float keys "k-<value>"; it parses what it formats.
type floatCodec struct{}

func (floatCodec) Format(k float64) string { return "k-" + strconv.FormatFloat(k, 'g', -1, 64) }
func (floatCodec) Parse(name string) (float64, bool) {
	if len(name) < 2 || name[:2] != "k-" {
		return 0, false
	}
	f, err := strconv.ParseFloat(name[2:], 64)
	return f, err == nil
}

// lossyCodec formats every key as one name: it cannot tell keys apart.
type lossyCodec struct{}

func (lossyCodec) Format(int64) string             { return "same" }
func (lossyCodec) Parse(name string) (int64, bool) { return 0, name == "same" }

func TestKeyRefusals(t *testing.T) {
	ctx := context.Background()
	files := dirlife.Files{"a": []byte("1")}
	build := func(context.Context, string) (int, error) { return 0, nil }

	fp := publish.New(filepath.Join(t.TempDir(), "f"), floatCodec{}, build, publish.Options[float64, int, int]{NoSync: true})
	if err := fp.Boot(); err != nil {
		t.Fatal(err)
	}
	if _, err := fp.Publish(ctx, math.NaN(), files, 0); !errors.Is(err, publish.ErrInvalidKey) {
		t.Errorf("NaN key: err %v, want ErrInvalidKey", err)
	}
	if _, err := fp.Publish(ctx, 1.5, files, 0); err != nil {
		t.Errorf("key 1.5: %v", err)
	}

	lp := publish.New(filepath.Join(t.TempDir(), "l"), lossyCodec{}, build, publish.Options[int64, int, int]{NoSync: true})
	if err := lp.Boot(); err != nil {
		t.Fatal(err)
	}
	var ke *publish.KeyError[int64]
	if _, err := lp.Publish(ctx, 5, files, 0); !errors.As(err, &ke) || ke.Key != 5 || ke.Name != "same" {
		t.Errorf("a codec that loses the key: err %v, want a KeyError naming 5 and \"same\"", err)
	}
}

func TestNotBootedAndZeroValue(t *testing.T) {
	p := publish.New(filepath.Join(t.TempDir(), "root"), genCodec, build, publish.Options[int64, dirlife.Digest, int]{})
	if _, err := p.Publish(context.Background(), 1, dirlife.Files{"a": nil}, 0); !errors.Is(err, publish.ErrNotBooted) {
		t.Errorf("Publish before Boot: err %v, want ErrNotBooted", err)
	}
	if err := p.Run(context.Background()); !errors.Is(err, publish.ErrNotBooted) {
		t.Errorf("Run before Boot: err %v, want ErrNotBooted", err)
	}
	var zero testPublisher
	for name, f := range map[string]func(){
		"Boot":    func() { zero.Boot() },
		"Publish": func() { zero.Publish(context.Background(), 1, nil, 0) },
		"Forget":  func() { zero.Forget() },
		"Slot":    func() { zero.Slot() },
		"Stats":   func() { zero.Stats() },
		"Run":     func() { zero.Run(context.Background()) },
	} {
		func() {
			defer func() {
				if r := recover(); r != "publish: Publisher used without New" {
					t.Errorf("zero Publisher's %s panicked with %v", name, r)
				}
			}()
			f()
		}()
	}
}

// TestCallbacksUnderNoLock calls back into the Publisher from OnPublish and
// OnReclaim, which would deadlock if they ran under its lock, and checks
// what they report.
func TestCallbacksUnderNoLock(t *testing.T) {
	var p *testPublisher
	var publishes []publish.PublishEvent[int64]
	var reclaims []publish.ReclaimEvent[int64]
	p = newPublisher(t, filepath.Join(t.TempDir(), "root"), publish.Options[int64, dirlife.Digest, int]{
		NoSync: true,
		OnPublish: func(ev publish.PublishEvent[int64]) {
			publishes = append(publishes, ev)
			p.Stats()
		},
		OnReclaim: func(ev publish.ReclaimEvent[int64]) {
			reclaims = append(reclaims, ev)
			p.Reclaim()
		},
	})
	ctx := context.Background()
	r1, _ := p.Publish(ctx, 1, dirlife.Files{"a": []byte("1")}, 0)
	l, _ := p.Slot().Lease()
	r2, _ := p.Publish(ctx, 1, dirlife.Files{"a": []byte("2")}, 0) // beside the leased one
	p.Publish(ctx, 1, dirlife.Files{"a": []byte("2")}, 1)          // identical, another value
	if len(reclaims) != 0 {
		t.Fatalf("removed %+v while leased", reclaims)
	}
	l.Release()
	p.Reclaim()
	outcomes := []publish.Outcome{}
	for _, ev := range publishes {
		outcomes = append(outcomes, ev.Outcome)
	}
	if want := []publish.Outcome{publish.Published, publish.Changed, publish.Unchanged}; !slices.Equal(outcomes, want) {
		t.Fatalf("outcomes %v, want %v", outcomes, want)
	}
	if publishes[1].Identity != r2.Identity() || publishes[1].Dir != r2.Dir {
		t.Fatalf("event %+v, want identity and directory of %+v", publishes[1], r2)
	}
	if len(reclaims) != 1 || reclaims[0].Identity != r1.Identity() || reclaims[0].Dir != r1.Dir || reclaims[0].Err != nil {
		t.Fatalf("reclaims %+v, want the removal of %v", reclaims, r1.Dir)
	}
	st := p.Stats()
	if !st.Held || st.Current != r2.Identity() || st.Publishes != 2 || st.Changes != 1 || st.Unchanged != 1 || st.Reclaims != 1 ||
		len(st.Dirs) != 1 || st.Dirs[0].Name != filepath.Base(r2.Dir) || !st.Dirs[0].Current {
		t.Fatalf("Stats() = %+v", st)
	}
	if _, cur, _ := p.Slot().Get(); cur.Value != 1 || cur.Dir != r2.Dir {
		t.Fatalf("after an identical re-publish with value 1: %+v", cur)
	}
}

// TestStatsCountsLeasesPerDirectory holds leases on two contents of one
// key and checks that Stats tells their directories apart.
func TestStatsCountsLeasesPerDirectory(t *testing.T) {
	p := newPublisher(t, filepath.Join(t.TempDir(), "root"), publish.Options[int64, dirlife.Digest, int]{NoSync: true})
	ctx := context.Background()
	p.Publish(ctx, 1, dirlife.Files{"a": []byte("1")}, 0)
	l1, _ := p.Slot().Lease()
	l2, _ := p.Slot().Lease()
	p.Publish(ctx, 1, dirlife.Files{"a": []byte("2")}, 0)
	l3, _ := p.Slot().Lease()
	defer l1.Release()
	defer l2.Release()
	defer l3.Release()
	st := p.Stats()
	if len(st.Dirs) != 2 || st.Dirs[0].Name != "gen-1" || st.Dirs[0].Leases != 2 || st.Dirs[0].Current ||
		st.Dirs[1].Leases != 1 || !st.Dirs[1].Current {
		t.Fatalf("Stats().Dirs = %+v", st.Dirs)
	}
}
