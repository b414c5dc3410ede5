package platform

import (
	"leasekit.dev/platform/isolate"
	"leasekit.dev/publish"
)

// A PublishEvent reports one Publish after its outcome is known: publish's
// event, with the generation as Key and the error Publish returned as Err.
// Its Outcome is one of publish's; which errors lead to which is said on
// [Publisher.Publish].
type PublishEvent = publish.PublishEvent[int64]

// A ReclaimEvent reports one attempt to remove a directory of a
// generation, or a background removal found failed or stalled: publish's
// event, whose Identity.Key is the generation (0 for a failure that
// concerns no generation's directory).
type ReclaimEvent = publish.ReclaimEvent[int64]

// Stats is a snapshot of a Publisher, for metrics: publish's, with the
// generation as key (Current.Key is the current generation, 0 when none is
// held), beside what the platform adds.
type Stats struct {
	publish.Stats[int64]

	Memo      MemoStats      // the render memo
	Admission AdmissionStats // the admission of renders that evaluate

	// Workers describes the worker processes of the Publisher's
	// Evaluator when it is an [*isolate.Workers] (renders killed past a
	// budget, restarts, pool size); the zero value when it evaluates
	// in-process.
	Workers isolate.Stats
}
