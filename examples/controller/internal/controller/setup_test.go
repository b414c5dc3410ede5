package controller

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/manager"
)

var _ manager.LeaderElectionRunnable = electedOnly{}

func TestPublisherNeedsLeaderElection(t *testing.T) {
	if !(electedOnly{}).NeedLeaderElection() {
		t.Fatal("the Publisher would start on a replica that is not elected")
	}
}
