package demo

import (
	"context"
	"errors"
	"sync"

	"leasekit.dev/platform"
	"leasekit.dev/publish"
)

// A recorder collects the publisher's events: each publish's outcome and
// timings, each reclaim's delay. It is safe for concurrent use.
type recorder struct {
	mu        sync.Mutex
	last      *platform.PublishEvent  // the last publish's event, until taken
	outcomes  map[publish.Outcome]int // but for the cancelled publishes
	cancelled int                     // publishes the run's end interrupted
	write     Histogram
	build     Histogram
	set       Histogram
	prune     Histogram

	lastInv *PublishInvalidation // the last publish's, once one set a record

	reclaims        int
	reclaimErrors   int
	firstReclaimErr error
	reclaimDelay    Histogram
}

func newRecorder() *recorder {
	return &recorder{outcomes: map[publish.Outcome]int{}}
}

// publish is the publisher's OnPublish.
func (r *recorder) publish(ev platform.PublishEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = &ev
	if interrupted(ev) {
		r.cancelled++
	} else {
		r.outcomes[ev.Outcome]++
	}
	switch ev.Outcome {
	case publish.Published, publish.Changed:
		r.write.Record(ev.Timings.Write)
		r.build.Record(ev.Timings.Build)
		r.set.Record(ev.Timings.Set)
		r.prune.Record(ev.Timings.Prune)
	case publish.BuildFailed:
		r.write.Record(ev.Timings.Write)
		r.build.Record(ev.Timings.Build)
	}
}

// interrupted reports whether ev is a publish that failed only because its
// context ended.
func interrupted(ev platform.PublishEvent) bool {
	return ev.Outcome == publish.Failed && (errors.Is(ev.Err, context.Canceled) || errors.Is(ev.Err, context.DeadlineExceeded))
}

// take returns the last publish's event and forgets it; ok is false when
// no publish reported one since the last take.
func (r *recorder) take() (ev platform.PublishEvent, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		return platform.PublishEvent{}, false
	}
	ev, r.last = *r.last, nil
	return ev, true
}

// reclaim is the publisher's OnReclaim.
func (r *recorder) reclaim(ev platform.ReclaimEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if ev.Err != nil {
		r.reclaimErrors++
		if r.firstReclaimErr == nil {
			r.firstReclaimErr = ev.Err
		}
		return
	}
	r.reclaims++
	r.reclaimDelay.Record(ev.Delay)
}

// invalidated records pi, the last publish's invalidation, for the status
// line; one that left nothing held is not recorded.
func (r *recorder) invalidated(pi PublishInvalidation) {
	if pi.Invalidated+pi.Valid == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastInv = &pi
}

// lastInvalidation returns the last publish's invalidation, and whether
// one was recorded.
func (r *recorder) lastInvalidation() (PublishInvalidation, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.lastInv == nil {
		return PublishInvalidation{}, false
	}
	return *r.lastInv, true
}
