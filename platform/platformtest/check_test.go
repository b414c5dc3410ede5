package platformtest_test

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"leasekit.dev/platform/platformtest"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The failures these tests provoke on purpose leave no fail file.
	if err := flag.Set("rapid.nofailfile", "true"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

func TestCheckPassesPublisher(t *testing.T) {
	platformtest.Check(t, newPublisher)
}

func TestCheckPassesHandWrittenReconciler(t *testing.T) {
	platformtest.Check(t, newOperator(correct), platformtest.FailureKeepsServing(), platformtest.IdenticalIsNoop())
}

// TestCheckFailsBrokenReconcilers shows that Check, with its default
// settings, fails each classic mistake, naming the property it breaks and
// the sequence that breaks it.
func TestCheckFailsBrokenReconcilers(t *testing.T) {
	for _, tc := range []struct {
		bug  bug
		want string // the properties its failure may name, a regular expression
	}{
		{pruneBeforeSet, "property [12] "},
		{keepWithoutLeased, "property [12] "},
		{rewriteLeased, "property [12] "},
		{resetWithReaders, "property [12] "},
		{acceptStale, "property 3 "},
	} {
		t.Run(strings.ReplaceAll(tc.bug.String(), " ", "_"), func(t *testing.T) {
			out := mustFail(t, newOperator(tc.bug))
			t.Log(out)
			if !regexp.MustCompile("platformtest: " + tc.want).MatchString(out) {
				t.Errorf("Check's failure does not name %s:\n%s", tc.want, out)
			}
			if !strings.Contains(out, "\nsequence: ") || !strings.Contains(out, "reconcile ") {
				t.Errorf("Check's failure does not give the sequence in words:\n%s", out)
			}
		})
	}
}

// TestCheckOptionsAreStricter shows that a correct reconciler that the
// defaults pass can fail a stricter property: the hand-written one
// refuses a change while its generation is leased and empties the store
// while it rewrites.
func TestCheckOptionsAreStricter(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  platformtest.Option
	}{
		{"ReconcilesSucceed", platformtest.ReconcilesSucceed()},
		{"LeasesNeverRefused", platformtest.LeasesNeverRefused()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := mustFail(t, newOperator(correct), tc.opt)
			if !strings.Contains(out, "platformtest: "+tc.name) {
				t.Errorf("Check's failure does not name %s:\n%s", tc.name, out)
			}
		})
	}
}

// mustFail runs Check on a fake testing.TB and returns what it reported,
// failing t unless Check failed.
func mustFail(t *testing.T, newTarget func(string) (platformtest.Target, error), opts ...platformtest.Option) string {
	t.Helper()
	fake := &fakeTB{name: t.Name()}
	base := t.TempDir()
	done := make(chan struct{})
	go func() {
		defer close(done)
		platformtest.CheckTB(fake, base, newTarget, opts...)
	}()
	<-done
	out := fake.output()
	if !fake.Failed() {
		t.Fatalf("Check passed a reconciler that it should fail:\n%s", out)
	}
	return out
}

// fakeTB is a testing.TB that records what is reported to it; FailNow
// ends the calling goroutine, as testing.T's does.
type fakeTB struct {
	name   string
	mu     sync.Mutex
	failed bool
	log    strings.Builder
}

func (f *fakeTB) Helper()      {}
func (f *fakeTB) Name() string { return f.name }
func (f *fakeTB) Logf(format string, args ...any) {
	f.Log(fmt.Sprintf(format, args...))
}
func (f *fakeTB) Log(args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fmt.Fprintln(&f.log, args...)
}
func (f *fakeTB) Skipf(format string, args ...any) { f.Logf(format, args...); runtime.Goexit() }
func (f *fakeTB) Skip(args ...any)                 { f.Log(args...); runtime.Goexit() }
func (f *fakeTB) SkipNow()                         { runtime.Goexit() }
func (f *fakeTB) Errorf(format string, args ...any) {
	f.Logf(format, args...)
	f.Fail()
}
func (f *fakeTB) Error(args ...any) { f.Log(args...); f.Fail() }
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.Errorf(format, args...)
	runtime.Goexit()
}
func (f *fakeTB) Fatal(args ...any) { f.Error(args...); runtime.Goexit() }
func (f *fakeTB) FailNow()          { f.Fail(); runtime.Goexit() }
func (f *fakeTB) Fail() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failed = true
}
func (f *fakeTB) Failed() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.failed
}
func (f *fakeTB) output() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.log.String()
}
