package slot

import (
	"runtime"
	"time"

	"leasekit.dev/lease"
)

// ReportLeaks installs hook as the leak reporter of s; a nil hook turns
// reporting off. It works as [lease.Counter.ReportLeaks] does: a lease
// taken while a hook is installed and found unreachable by the garbage
// collector before [Lease.Release] was called is reported with its key and
// the time it was taken. The leaked lease is not released, so its key stays
// in [Slot.Leased]. The hook runs on a goroutine of the runtime's, never
// while s holds its lock. Reporting is off by default and costs nothing
// then.
func (s *Slot[K, V]) ReportLeaks(hook func(lease.Leak[K])) {
	if hook == nil {
		s.leakFn.Store(nil)
		return
	}
	s.leakFn.Store(&hook)
}

func (s *Slot[K, V]) track(l *Lease[K, V]) {
	l.cleanup = runtime.AddCleanup(l, s.reportLeak, lease.Leak[K]{Key: l.h.key, Acquired: time.Now()})
}

func (s *Slot[K, V]) reportLeak(leak lease.Leak[K]) {
	if fn := s.leakFn.Load(); fn != nil {
		(*fn)(leak)
	}
}
