package lease_test

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"leasekit.dev/lease"
)

// A reader leases the generation it reads; the cleaner keeps every leased
// generation and waits for a superseded one to drain before removing it.
func ExampleCounter() {
	var readers lease.Counter[int64]

	l := readers.Acquire(41) // a render still reading generation 41
	fmt.Println("leased:", readers.Leased())

	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := readers.Wait(context.Background(), 41); err == nil {
			fmt.Println("generation 41 drained; safe to remove")
		}
	}()

	l.Release()
	<-done
	fmt.Println("leased:", readers.Leased())
	// Output:
	// leased: [41]
	// generation 41 drained; safe to remove
	// leased: []
}

// WaitIdle is the drain before shutdown.
func ExampleCounter_WaitIdle() {
	var c lease.Counter[string]
	a, b := c.Acquire("a"), c.Acquire("b")
	go func() { a.Release(); b.Release() }()
	err := c.WaitIdle(context.Background())
	fmt.Println(err, c.Leased())
	// Output: <nil> []
}

func ExampleLease_Release() {
	var c lease.Counter[string]
	l := c.Acquire("v1")
	defer l.Release() // releasing twice is harmless
	l.Release()
	fmt.Println(c.Count("v1"))
	// Output: 0
}

// Leak reporting finds a lease that was dropped without Release. The
// report comes from the garbage collector, so a real program logs it; here
// the example collects until the report arrives.
func ExampleCounter_ReportLeaks() {
	var c lease.Counter[string]
	leaks := make(chan lease.Leak[string], 1)
	c.ReportLeaks(func(l lease.Leak[string]) { leaks <- l })

	func() {
		c.Acquire("gen-3") // a render that forgot its deferred Release
	}()
	for range 1000 {
		runtime.GC()
		select {
		case l := <-leaks:
			fmt.Println("leaked:", l.Key, "still leased:", c.Count(l.Key))
			return
		case <-time.After(time.Millisecond):
		}
	}
	fmt.Println("the dropped lease was not collected")
	// Output: leaked: gen-3 still leased: 1
}
