package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"leasekit.dev/platform/isolate"
	"sigs.k8s.io/yaml"
)

// TestDeploymentArgs: the Deployment's arguments are flags this program
// accepts, they set the worker count and budget explicitly, and the
// container's memory request and limit cover the workers' budgets.
func TestDeploymentArgs(t *testing.T) {
	data, err := os.ReadFile("config/manager/manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		t.Fatalf("config/manager/manager.yaml: %v", err)
	}
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", n)
	}
	c := d.Spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	for _, want := range []string{"--render-workers=", "--render-memory=", "--leader-elect=true", "--warm-standby=true", "--platform-dir-no-sync"} {
		if !strings.Contains(args, want) {
			t.Errorf("the Deployment's args %q do not set %s", args, want)
		}
	}
	o, err := parseFlags(c.Args, new(bytes.Buffer))
	if err != nil {
		t.Fatalf("the Deployment's args %q: %v", args, err)
	}
	if o.renderWorkers == 0 {
		t.Fatalf("the Deployment leaves --render-workers to GOMAXPROCS, so its memory is not bounded")
	}
	budgets := resource.NewQuantity(int64(o.renderWorkers)*o.renderMemory, resource.BinarySI)
	for what, q := range map[string]resource.Quantity{"request": c.Resources.Requests.Memory().DeepCopy(), "limit": c.Resources.Limits.Memory().DeepCopy()} {
		if q.Cmp(*budgets) <= 0 {
			t.Errorf("memory %s %v does not cover %d workers × %d bytes = %v and a base", what, &q, o.renderWorkers, o.renderMemory, budgets)
		}
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
}

func TestFlagsHelpExplainsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseFlags([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v, want flag.ErrHelp", err)
	}
	help := out.String()
	if !strings.HasPrefix(help, "Usage: go run ./examples/controller --platform-dir DIR [flags]") {
		t.Errorf("-h does not start with the usage line:\n%s", help)
	}
	for _, name := range []string{"platform-dir", "platform-dir-no-sync", "metrics-bind-address", "metrics-secure", "health-probe-bind-address",
		"leader-elect", "warm-standby", "leader-election-namespace", "reconcile-timeout", "kubeconfig", "zap-log-level",
		"render-timeout", "render-memory", "render-workers", "in-process"} {
		if !strings.Contains(help, "  -"+name+" ") && !strings.Contains(help, "  -"+name+"\n") {
			t.Errorf("-h does not explain --%s:\n%s", name, help)
		}
	}
}

func TestFlagsDefaults(t *testing.T) {
	o, err := parseFlags([]string{"--platform-dir", "dir"}, new(bytes.Buffer))
	if err != nil {
		t.Fatal(err)
	}
	if o.platformDir != "dir" || !o.leaderElect || !o.warm || o.metricsAddr != ":8443" || !o.metricsTLS || o.timeout != 2*time.Minute || o.noSync ||
		o.inProcess || o.renderTimeout != isolate.DefaultTimeout || o.renderMemory != isolate.DefaultMemory {
		t.Errorf("options %+v: want dir, leader election on, 2m timeout, sync on", o)
	}
}

func TestFlagsRefusals(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--platform-dir is required"},
		{[]string{"--platform-dir", "d", "extra"}, `unexpected argument "extra"`},
		{[]string{"--platform-dir", "d", "--reconcile-timeout", "0s"}, "--reconcile-timeout 0s: must be positive"},
		{[]string{"--platform-dir", "d", "--no-such-flag"}, "no-such-flag"},
		{[]string{"--platform-dir", "d", "--render-timeout", "0s"}, "--render-timeout 0s: must be positive"},
		{[]string{"--platform-dir", "d", "--render-memory", "1MiB"}, "--render-memory 1048576 bytes: must be at least 32MiB"},
		{[]string{"--platform-dir", "d", "--render-memory", "much"}, "not a size"},
		{[]string{"--platform-dir", "d", "--render-workers", "-1"}, "--render-workers -1"},
	} {
		_, err := parseFlags(c.args, new(bytes.Buffer))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error naming %q", c.args, err, c.want)
		}
	}
}

// TestShardedDeploymentArgs: config/sharded's Deployment runs three
// replicas with flags this program accepts, in a ring, with the worker
// budgets of config/manager.
func TestShardedDeploymentArgs(t *testing.T) {
	data, err := os.ReadFile("config/sharded/manager_patch.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(data, &d); err != nil {
		t.Fatalf("config/sharded/manager_patch.yaml: %v", err)
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 3 {
		t.Errorf("replicas %v, want 3", d.Spec.Replicas)
	}
	c := d.Spec.Template.Spec.Containers[0]
	o, err := parseFlags(c.Args, new(bytes.Buffer))
	if err != nil {
		t.Fatalf("the sharded Deployment's args %q: %v", c.Args, err)
	}
	if o.ring == "" {
		t.Errorf("the sharded Deployment's args %q set no --ring", c.Args)
	}
	if o.renderWorkers != 2 || o.renderMemory != 512<<20 {
		t.Errorf("the sharded Deployment runs %d workers of %d bytes, want config/manager's 2 of 512MiB: its memory request is config/manager's", o.renderWorkers, o.renderMemory)
	}
}

// TestRingFlags refuses a renew period past a third of the lease.
func TestRingFlags(t *testing.T) {
	_, err := parseFlags([]string{"--platform-dir=x", "--ring=platform", "--ring-lease-duration=5s", "--ring-renew-period=2s"}, new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "--ring-lease-duration 5s") {
		t.Fatalf("a lease of 5s renewed each 2s: %v, want an error naming the lease", err)
	}
	if _, err := parseFlags([]string{"--platform-dir=x", "--ring=platform"}, new(bytes.Buffer)); err != nil {
		t.Fatalf("the ring's defaults: %v", err)
	}
}
