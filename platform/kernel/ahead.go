package kernel

import "context"

// An ahead is work running on a goroutine of its own, waited for by the
// one goroutine that started it.
type ahead struct {
	done     chan struct{} // closed when the work has ended
	panicked any
}

// goAhead runs f on a goroutine of its own.
func goAhead(f func()) *ahead {
	a := &ahead{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		defer func() { a.panicked = recover() }()
		f()
	}()
	return a
}

// wait waits for the work to end. If it panicked, wait panics with the
// same value, in the caller's goroutine, where the caller can recover it
// as if the work had run there.
func (a *ahead) wait() {
	<-a.done
	if p := a.panicked; p != nil {
		a.panicked = nil
		panic(p)
	}
}

// waitContext waits for the work to end, as wait does, or for ctx to be
// done: then it returns ctx.Err() at once, and the work goes on to its
// end unwaited for. Work that reads through a moduleFS with the same ctx
// stops at its next read.
func (a *ahead) waitContext(ctx context.Context) error {
	select {
	case <-a.done:
		a.wait()
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
