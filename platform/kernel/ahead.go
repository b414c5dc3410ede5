package kernel

import "sync"

// An ahead is work running on a goroutine of its own, waited for by the
// one goroutine that started it.
type ahead struct {
	done     sync.WaitGroup
	panicked any
}

// goAhead runs f on a goroutine of its own.
func goAhead(f func()) *ahead {
	a := &ahead{}
	a.done.Go(func() {
		defer func() { a.panicked = recover() }()
		f()
	})
	return a
}

// wait waits for the work to end. If it panicked, wait panics with the
// same value, in the caller's goroutine, where the caller can recover it
// as if the work had run there.
func (a *ahead) wait() {
	a.done.Wait()
	if p := a.panicked; p != nil {
		a.panicked = nil
		panic(p)
	}
}
