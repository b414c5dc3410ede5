package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/yaml"

	"leasekit.dev/examples/operator/internal/demo"
	"leasekit.dev/platform"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
)

// renderOne publishes the default generation on dir and renders the
// instance module in o.render against it: resources as YAML (or JSON with
// --json) on stdout, diagnostics and errors on stderr.
func renderOne(ctx context.Context, o options, k platform.Evaluator, dir string, stdout, stderr io.Writer) int {
	// fail reports err on stderr, and with --json as an object on stdout
	// too, and returns code (the interrupt's when ctx has ended).
	fail := func(code int, generation int64, what string, err error) int {
		fmt.Fprintf(stderr, "operator: %s:\n", what)
		writeError(stderr, err)
		if o.json {
			writeJSONError(stdout, stderr, o.render, generation, what, err)
		}
		if ctx.Err() != nil {
			return exitInterrupt
		}
		return code
	}
	pub := platform.NewPublisher(dir, platform.PublisherOptions{NoSync: o.noSync, Evaluator: k})
	if err := pub.Boot(); err != nil {
		return fail(exitUsage, 0, "booting the publisher on "+dir, dirError(err))
	}
	def := demo.Default()
	if _, err := pub.Publish(ctx, def.Generation, def.Files, def.Skew); err != nil {
		return fail(exitViolation, def.Generation, "publishing the default generation", err)
	}
	out, g, err := pub.Render(ctx, kernel.Instance{Dir: o.render})
	for _, d := range out.Diagnostics {
		fmt.Fprintf(stderr, "%s: %s\n", d.Severity, d.Message)
	}
	if err != nil {
		return fail(exitViolation, g.Generation, fmt.Sprintf("rendering %s against generation %d", o.render, g.Generation), err)
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

// A jsonError is what --render --json prints on stdout for a failure.
type jsonError struct {
	Instance   string   `json:"instance"`   // the instance module's directory, as given
	Generation int64    `json:"generation"` // the platform generation rendered against; 0 before one was published
	Error      string   `json:"error"`      // what failed, and why, on one line
	Problems   []string `json:"problems"`   // each problem on a line of its own, file:line:col first where known
}

// writeJSONError writes err as a jsonError on stdout.
func writeJSONError(stdout, stderr io.Writer, instance string, generation int64, what string, err error) {
	problems := problemList(err)
	// The first line of a *kernel.Error of several problems is its count,
	// "kernel: render DIR: 4 problems:", which the list then follows.
	msg, _, _ := strings.Cut(err.Error(), "\n")
	if trimmed, ok := strings.CutSuffix(msg, ":"); ok && len(problems) > 1 {
		msg = trimmed + ", each in problems"
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(jsonError{Instance: instance, Generation: generation, Error: what + ": " + msg, Problems: problems}); err != nil {
		fmt.Fprintf(stderr, "operator: %v\n", err)
	}
}

// problemList returns err's problems for --json, one entry each: a
// problem of a *kernel.Error as file:line:col: path: message, with its
// other positions after it on the same line; each error of a joined error
// (catalog and skew refusals); any other error's text on one line.
func problemList(err error) []string {
	var kerr *kernel.Error
	if errors.As(err, &kerr) {
		list := make([]string, len(kerr.Problems))
		for i, p := range kerr.Problems {
			first := min(1, len(p.Positions))
			also := p.Positions[first:]
			p.Positions = p.Positions[:first]
			list[i] = p.String()
			if len(also) > 0 {
				list[i] += " (also " + strings.Join(also, ", ") + ")"
			}
		}
		return list
	}
	if joined, ok := err.(interface{ Unwrap() []error }); ok {
		list := []string{}
		for _, e := range joined.Unwrap() {
			list = append(list, problemList(e)...)
		}
		return list
	}
	line := strings.Join(strings.Fields(err.Error()), " ")
	var budget *isolate.BudgetError
	if errors.As(err, &budget) {
		flag := map[string]string{"time": "--render-timeout", "memory": "--render-memory"}[budget.Budget]
		line += fmt.Sprintf(" (the %s budget is set by %s)", budget.Budget, flag)
	}
	return []string{line}
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
	var budget *isolate.BudgetError
	if errors.As(err, &budget) {
		flag := map[string]string{"time": "--render-timeout", "memory": "--render-memory"}[budget.Budget]
		fmt.Fprintf(w, "  (the %s budget is set by %s)\n", budget.Budget, flag)
	}
}
