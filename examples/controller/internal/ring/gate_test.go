package ring

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// TestGateDrainWaitsForHolds: Drain returns once the last hold on the
// part ends, ignores holds elsewhere, and returns ctx's error when ctx
// ends first; a hold past the deadline does not write.
func TestGateDrainWaitsForHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Gate
		half := Set{{0, 1<<63 - 1}}
		g.Set(Full(), Full(), time.Now().Add(time.Minute))
		in, out := g.Hold(1), g.Hold(1<<63)
		if !in.Writes() || !out.Writes() {
			t.Fatal("holds within the part written for do not write")
		}
		g.Set(Full(), Full().Minus(half), time.Now().Add(time.Minute))
		if in.Writes() {
			t.Fatal("a hold in a part stopped still writes")
		}
		done := make(chan error)
		go func() { done <- g.Drain(context.Background(), half) }()
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("Drain returned %v with a hold in the part", err)
		default:
		}
		in.Done()
		in.Done() // a second Done does nothing
		if err := <-done; err != nil {
			t.Fatalf("Drain: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := g.Drain(ctx, Full()); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Drain with a hold left: %v, want the context's deadline", err)
		}
		time.Sleep(time.Minute)
		if out.Writes() {
			t.Fatal("a hold writes past the deadline")
		}
		out.Done()
	})
}
