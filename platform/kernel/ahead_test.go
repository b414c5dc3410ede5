package kernel

import (
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
