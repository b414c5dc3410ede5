package kernel

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
)

func TestAheadWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ran := false
		a := goAhead(func() { ran = true })
		a.wait()
		if !ran {
			t.Fatal("wait returned before the work ran")
		}
		a.wait() // a second wait returns at once
	})
}

// TestAheadPanics: a panic in the work reaches the waiting goroutine,
// where it can be recovered, and only once.
func TestAheadPanics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := goAhead(func() { panic("boom") })
		recovered := func() (r any) {
			defer func() { r = recover() }()
			a.wait()
			return nil
		}()
		if recovered != "boom" {
			t.Fatalf("wait recovered %v, want boom", recovered)
		}
		a.wait() // the panic was handed over: a second wait returns
	})
}

// TestAheadWaitContext: waitContext returns ctx.Err() at once when ctx is
// done before the work ends, and the work still runs to its end; when the
// work ends first, it returns nil, and hands over a panic as wait does.
func TestAheadWaitContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release, ended := make(chan struct{}), false
		a := goAhead(func() { <-release; ended = true })
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := a.waitContext(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("waitContext with a cancelled context = %v", err)
		}
		close(release)
		a.wait()
		if !ended {
			t.Fatal("the work did not run to its end")
		}
		if err := a.waitContext(context.Background()); err != nil {
			t.Fatalf("waitContext after the work ended = %v", err)
		}

		a = goAhead(func() { panic("boom") })
		recovered := func() (r any) {
			defer func() { r = recover() }()
			a.waitContext(context.Background())
			return nil
		}()
		if recovered != "boom" {
			t.Fatalf("waitContext recovered %v, want boom", recovered)
		}
	})
}
