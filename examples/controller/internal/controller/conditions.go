package controller

import (
	"errors"
	"fmt"
	"strings"

	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// Reasons of the Platform's conditions.
const (
	ReasonPublished    = "Published"
	ReasonNotPublished = "NotPublished"
	ReasonInvalidSpec  = "InvalidSpec"
	ReasonBuildFailed  = "BuildFailed"
	ReasonBuilt        = "Built"
	ReasonStale        = "StaleGeneration"
	ReasonCurrent      = "Current"
)

// maxMessage bounds a condition message, below the API's 32768 bytes.
const maxMessage = 8192

// describe returns the message for a failed build or render: every problem
// of a kernel error with its positions, the field and rule of an input
// error, or the error's text.
func describe(err error) string {
	var msg string
	var ke *kernel.Error
	var ie *platformmodule.InputError
	switch {
	case errors.As(err, &ke):
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s: %d problem(s)", ke.Op, ke.Dir, len(ke.Problems))
		for _, p := range ke.Problems {
			b.WriteString("; ")
			b.WriteString(p.String())
		}
		msg = b.String()
	case errors.As(err, &ie):
		// Every field the generator refuses, each as the spec names it.
		var parts []string
		for _, e := range leaves(err) {
			if ie, ok := e.(*platformmodule.InputError); ok {
				parts = append(parts, fmt.Sprintf("%s %q: %s", specField(ie.Field), ie.Value, ie.Rule))
			}
		}
		msg = "spec: " + strings.Join(parts, "; ")
	default:
		msg = err.Error()
	}
	return truncate(msg, maxMessage)
}

// leaves returns the errors err joins or wraps, recursively, or err
// alone.
func leaves(err error) []error {
	switch e := err.(type) {
	case interface{ Unwrap() []error }:
		var all []error
		for _, e := range e.Unwrap() {
			all = append(all, leaves(e)...)
		}
		return all
	case *platformmodule.InputError:
	case interface{ Unwrap() error }:
		if inner := e.Unwrap(); inner != nil {
			return leaves(inner)
		}
	}
	return []error{err}
}

// specField maps a generator input field ("Catalogs[2].Version") to the
// Platform spec field it came from ("spec.catalogs[2].version").
func specField(field string) string {
	var b strings.Builder
	b.WriteString("spec.")
	upper := true
	for _, r := range field {
		if upper && r >= 'A' && r <= 'Z' {
			r += 'a' - 'A'
		}
		upper = r == '.'
		b.WriteRune(r)
	}
	return b.String()
}

// truncate cuts s to at most n bytes, on a rune boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = " …(truncated)"
	cut := n - len(mark)
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }
