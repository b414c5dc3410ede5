package demo

import (
	"context"
	"fmt"

	"leasekit.dev/platform"
	"leasekit.dev/publish"
)

// Invalidation is what the run's publishes did to the renders of the
// embedded instances: for each publish, how many of their renders the
// platform change invalidated (their [platform.RenderKey] changed, so a
// render evaluates again) and how many it left valid (their key, and so
// their memo entry, stayed). Keys are computed with
// [platform.Publisher.Key], without evaluating.
type Invalidation struct {
	Instances   int `json:"instances"`   // the embedded instances
	Publishes   int `json:"publishes"`   // publishes counted: every one after the first that set a record
	Invalidated int `json:"invalidated"` // renders invalidated, over those publishes
	Valid       int `json:"valid"`       // renders left valid, over those publishes

	PerPublish []PublishInvalidation `json:"per_publish"` // the first 1,000 publishes, in order; the first one's renders are all new
}

// A PublishInvalidation is what one publish did to the embedded instances'
// renders.
type PublishInvalidation struct {
	Generation  int64  `json:"generation"`
	Change      string `json:"change"`
	Outcome     string `json:"outcome"`     // the publish's outcome, as publish.Outcome says it
	Invalidated int    `json:"invalidated"` // renders whose key the publish changed: all of them for the first record
	Valid       int    `json:"valid"`       // renders whose key it left as it was
}

// maxPerPublish bounds the publishes an Invalidation lists.
const maxPerPublish = 1000

// renderKeys returns the key of each embedded instance's render against
// the record pub's store holds, nil when it holds none; an instance whose
// key cannot be computed has the zero key, which no render has.
func renderKeys(ctx context.Context, pub *platform.Publisher) []platform.RenderKey {
	rec, held := pub.Store().Generated()
	if !held {
		return nil
	}
	insts := Instances()
	keys := make([]platform.RenderKey, len(insts))
	for i, in := range insts {
		keys[i], _ = pub.Key(ctx, rec, in.Kernel())
	}
	return keys
}

// record counts one publish of st, whose outcome was outcome, that took
// the embedded instances' keys from before to after, and returns what it
// counted.
func (v *Invalidation) record(st Step, outcome publish.Outcome, before, after []platform.RenderKey) PublishInvalidation {
	pi := PublishInvalidation{Generation: st.Generation, Change: st.Change, Outcome: outcome.String()}
	for i, k := range after {
		if before == nil || before[i] != k || k == (platform.RenderKey{}) {
			pi.Invalidated++
		} else {
			pi.Valid++
		}
	}
	if after == nil { // nothing held after it: nothing to render
		return pi
	}
	if before != nil {
		v.Publishes++
		v.Invalidated += pi.Invalidated
		v.Valid += pi.Valid
	}
	if len(v.PerPublish) < maxPerPublish {
		v.PerPublish = append(v.PerPublish, pi)
	}
	return pi
}

// String returns p as a few words: "generation 7 (bump web v1.4.1):
// 2 invalidated, 3 valid".
func (p PublishInvalidation) String() string {
	return fmt.Sprintf("generation %d (%s, %s): %d invalidated, %d valid", p.Generation, p.Change, p.Outcome, p.Invalidated, p.Valid)
}
