package main

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
	"time"

	"leasekit.dev/platform/kernel/isolate"
)

func TestFlagsHelpExplainsEveryFlag(t *testing.T) {
	var out bytes.Buffer
	if _, err := parseFlags([]string{"-h"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-h: %v, want flag.ErrHelp", err)
	}
	help := out.String()
	if !strings.HasPrefix(help, "Usage: go run ./examples/controller --platform-dir DIR [flags]") {
		t.Errorf("-h does not start with the usage line:\n%s", help)
	}
	for _, name := range []string{"platform-dir", "platform-dir-no-sync", "metrics-bind-address", "health-probe-bind-address",
		"leader-elect", "leader-election-namespace", "reconcile-timeout", "kubeconfig", "zap-log-level",
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
	if o.platformDir != "dir" || !o.leaderElect || o.timeout != 2*time.Minute || o.noSync ||
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
