package platform

import (
	"context"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// DefaultAdmissionCapacity is the most instance and platform bytes the
// renders a [Publisher] evaluates at once may read together, when
// [PublisherOptions].AdmissionCapacity is zero: 64 MiB.
const DefaultAdmissionCapacity = 64 << 20

// AdmissionStats describes the admission of a Publisher's evaluations.
type AdmissionStats struct {
	Capacity int64  // the most bytes admitted at once; 0 when admission is off
	Admitted int64  // bytes of the evaluations running now
	Running  int64  // evaluations running now
	Waiting  int64  // evaluations waiting for admission now
	Waits    uint64 // evaluations that had to wait for admission, in all
}

// An admission bounds the bytes that the evaluations running at once
// read: each is weighed at its instance's and platform's bytes, clamped
// to the capacity, so that a heavier one runs alone.
type admission struct {
	capacity int64 // 0: no bound
	sem      *semaphore.Weighted
	admitted atomic.Int64
	running  atomic.Int64
	waiting  atomic.Int64
	waits    atomic.Uint64
}

func newAdmission(capacity int64) *admission {
	a := &admission{}
	if capacity > 0 {
		a.capacity = capacity
		a.sem = semaphore.NewWeighted(capacity)
	}
	return a
}

// acquire admits an evaluation of weight bytes, waiting while the
// evaluations running hold too much of the capacity, and returns its
// release. On failure it returns ctx.Err() and admits nothing.
func (a *admission) acquire(ctx context.Context, weight int64) (func(), error) {
	weight = min(max(weight, 0), a.capacity)
	if a.sem != nil && !a.sem.TryAcquire(weight) {
		a.waits.Add(1)
		a.waiting.Add(1)
		err := a.sem.Acquire(ctx, weight)
		a.waiting.Add(-1)
		if err != nil {
			return nil, err
		}
	}
	a.admitted.Add(weight)
	a.running.Add(1)
	return func() {
		a.running.Add(-1)
		a.admitted.Add(-weight)
		if a.sem != nil {
			a.sem.Release(weight)
		}
	}, nil
}

func (a *admission) snapshot() AdmissionStats {
	return AdmissionStats{Capacity: a.capacity, Admitted: a.admitted.Load(), Running: a.running.Load(), Waiting: a.waiting.Load(), Waits: a.waits.Load()}
}
