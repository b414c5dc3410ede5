package controller

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/manager"

	"leasekit.dev/platform"
)

var _ manager.LeaderElectionRunnable = &electedOnly{}

func TestPublisherNeedsLeaderElection(t *testing.T) {
	if !(&electedOnly{}).NeedLeaderElection() {
		t.Fatal("the Publisher would start on a replica that is not elected")
	}
}

// Readiness follows the Publisher's boot on the elected replica; a standby
// is ready.
func TestReadyOnceThePublisherBooted(t *testing.T) {
	pub := platform.NewPublisher(filepath.Join(t.TempDir(), "platform"), platform.PublisherOptions{NoSync: true})
	elected := make(chan struct{})
	w := &Wiring{Publisher: pub, runnable: &electedOnly{pub: pub}, elected: elected}
	if err := w.Ready(nil); err != nil {
		t.Fatalf("a standby replica: Ready = %v, want ready", err)
	}
	close(elected)
	if err := w.Ready(nil); err == nil || !strings.Contains(err.Error(), "not booted") {
		t.Fatalf("elected, not booted: Ready = %v, want an error saying the publisher has not booted", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // Start boots, then its reclaim loop returns at once
	if err := w.runnable.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Ready(nil); err != nil {
		t.Fatalf("elected and booted: Ready = %v, want ready", err)
	}
}
