package lease

import (
	"cmp"
	"runtime"
	"time"
)

// A Leak describes a lease that became unreachable without being released.
type Leak[K cmp.Ordered] struct {
	Key      K         // the key the lease holds
	Acquired time.Time // when the lease was acquired
}

// ReportLeaks installs hook as the leak reporter of c; a nil hook turns
// reporting off. Leak reporting is off by default and costs nothing then.
//
// Every lease acquired while a hook is installed is tracked: if the garbage
// collector finds it unreachable before [Lease.Release] was called, the hook
// installed at that moment (if any) is called with the lease's key and
// acquisition time. The leaked lease is not released: its key stays leased,
// because only the holder knows whether the resource it guards is still in
// use. The hook runs on a goroutine of the runtime's, one report at a time,
// never while c holds its lock; it should return quickly.
func (c *Counter[K]) ReportLeaks(hook func(Leak[K])) {
	if hook == nil {
		c.leakFn.Store(nil)
		return
	}
	c.leakFn.Store(&hook)
}

func (c *Counter[K]) track(l *Lease[K]) {
	l.tracked = true
	l.cleanup = runtime.AddCleanup(l, c.reportLeak, Leak[K]{Key: l.key, Acquired: time.Now()})
}

func (c *Counter[K]) reportLeak(leak Leak[K]) {
	if fn := c.leakFn.Load(); fn != nil {
		(*fn)(leak)
	}
}
