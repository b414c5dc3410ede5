package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"sigs.k8s.io/yaml"

	"leasekit.dev/examples/operator/internal/demo"
	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
)

// renderOne publishes the default generation on dir and renders the
// instance module in o.render against it: resources as YAML (or JSON with
// --json) on stdout, diagnostics and errors on stderr.
func renderOne(ctx context.Context, o options, dir string, stdout, stderr io.Writer) int {
	pub := platform.NewPublisher(dir, platform.PublisherOptions{NoSync: o.noSync})
	if err := pub.Boot(); err != nil {
		fmt.Fprintf(stderr, "operator: %v\n", err)
		return exitUsage
	}
	def := demo.Default()
	if _, err := pub.Publish(ctx, def.Generation, def.Files, def.Skew); err != nil {
		fmt.Fprintf(stderr, "operator: publishing the default generation: %v\n", err)
		return exitViolation
	}
	out, g, err := pub.Render(ctx, kernel.Instance{Dir: o.render})
	for _, d := range out.Diagnostics {
		fmt.Fprintf(stderr, "%s: %s\n", d.Severity, d.Message)
	}
	if err != nil {
		fmt.Fprintf(stderr, "operator: rendering %s against generation %d:\n", o.render, g.Generation)
		writeError(stderr, err)
		return exitViolation
	}
	if o.json {
		objects := make([]map[string]any, len(out.Resources))
		for i, r := range out.Resources {
			objects[i] = r.Object
		}
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Instance    string              `json:"instance"`
			Generation  int64               `json:"generation"`
			Resources   []map[string]any    `json:"resources"`
			Diagnostics []kernel.Diagnostic `json:"diagnostics"`
		}{out.Instance, g.Generation, objects, out.Diagnostics}); err != nil {
			fmt.Fprintf(stderr, "operator: %v\n", err)
			return exitViolation
		}
		return exitOK
	}
	for i, r := range out.Resources {
		y, err := yaml.Marshal(r.Object)
		if err != nil {
			fmt.Fprintf(stderr, "operator: resource %s: %v\n", r.Name, err)
			return exitViolation
		}
		if i > 0 {
			fmt.Fprintln(stdout, "---")
		}
		stdout.Write(y)
	}
	return exitOK
}

// writeError writes err as the kernel reports it: every problem of a
// *kernel.Error on a line of its own, file:line:col first; every error of
// a joined error (catalog and skew refusals) on a line of its own.
func writeError(w io.Writer, err error) {
	var kerr *kernel.Error
	if errors.As(err, &kerr) {
		for _, p := range kerr.Problems {
			fmt.Fprintf(w, "  %s\n", p)
		}
		return
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range joined.Unwrap() {
			writeError(w, e)
		}
		return
	}
	fmt.Fprintf(w, "  %v\n", err)
}
