package kernel

import (
	"strings"
	"testing"

	"cuelang.org/go/cue/parser"
	"pgregory.net/rapid"

	"leasekit.dev/platform/kernel/internal/modread"
)

// nested draws a CUE expression and returns it with its nesting depth as
// Depth counts it standing alone (d) and as the value of a field
// (dv): each field label counts, and so do structs, lists, parentheses
// and interpolations in every string form, save a bracket that opens a
// field's value, and the operators but & and |; brackets inside strings
// and comments do not. With
// evaluable set, it draws no interpolations, so that the expression
// evaluates: a struct does not interpolate.
func nested(t *rapid.T, budget int, evaluable bool) (expr string, d, dv int) {
	leaves := []string{
		`1`, `"x"`, `"{[(("`, `'}])'`, `#"\("#`, `"\\("`, `"\"{"`, `#"{"#`, "\"\"\"\n\t{[(\n\t\"\"\"",
		"#'''\n\t\\(\n\t'''#", `##"x"#{"##`, `"a: b: c"`,
	}
	kind := "leaf"
	kinds := []string{"leaf", "struct", "list", "paren", "wide", "chain", "interp", "rawInterp", "multiInterp", "sum", "unify"}
	if evaluable {
		kinds = kinds[:6]
	}
	if budget > 0 {
		kind = rapid.SampledFrom(kinds).Draw(t, "kind")
	}
	bracket := func(expr string, d int) (string, int, int) { return expr, d, d }
	other := func(expr string, d int) (string, int, int) { return expr, d, d + 1 }
	if kind == "leaf" {
		return other(rapid.SampledFrom(leaves).Draw(t, "leaf"), 0)
	}
	inner, d, dv := nested(t, budget-1, evaluable)
	switch kind {
	case "struct":
		return bracket("{\n// {{{ [[[ (((\n\ta: "+inner+" // ]]]\n}", dv+1)
	case "chain":
		return bracket("{c: d: "+inner+"}", dv+2)
	case "list":
		return bracket("["+inner+", 2]", d+1)
	case "paren":
		return bracket("("+inner+")", d+1)
	case "interp":
		return other(`"x\(`+inner+`)y"`, d+1)
	case "rawInterp":
		return other(`#"x\#(`+inner+`)y"#`, d+1)
	case "sum": // each operator a level, across lines
		op := rapid.SampledFrom([]string{"+", "-", "*", "/", "<=", "==", "!=", "=~", "&&", "||", "<", ">="}).Draw(t, "operator")
		return other("1 "+op+"\n\t"+inner, d+1)
	case "unify": // & and | are no level
		return other("_ & ("+inner+") | 1", d+1)
	case "multiInterp":
		return other("\"\"\"\n\t{ \\("+inner+")\n\t\"\"\"", d+1)
	}
	// wide: a struct of several fields, as deep as its deepest.
	var b strings.Builder
	deepest := 0
	b.WriteString("{")
	for i := range rapid.IntRange(1, 4).Draw(t, "fields") {
		if i > 0 {
			inner, _, dv = nested(t, budget-1, evaluable)
		}
		b.WriteString("f" + string(rune('0'+i)) + ": " + inner + "\n")
		deepest = max(deepest, dv)
	}
	b.WriteString("}")
	return bracket(b.String(), deepest+1)
}

// TestNestingDepth: over generated CUE, the value of a field, Depth
// counts exactly the nesting the generator built, stops exactly one level past its limit,
// and visits each byte at most twice.
func TestNestingDepth(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		expr, _, depth := nested(t, rapid.IntRange(0, 12).Draw(t, "budget"), false)
		src := []byte("package p\n\nx: " + expr + "\n")
		if _, err := parser.ParseFile("p.cue", src); err != nil {
			t.Fatalf("the generator made CUE that does not parse: %v\n%s", err, src)
		}
		limit := rapid.IntRange(0, depth+2).Draw(t, "limit")
		got, steps := modread.Depth(src, limit)
		if want := min(depth, limit+1); got != want {
			t.Fatalf("modread.Depth(limit %d) = %d, want %d in\n%s", limit, got, want, src)
		}
		if steps > 2*len(src) {
			t.Fatalf("%d steps over %d bytes", steps, len(src))
		}
	})
}

// TestNestingDepthLinear: the scan of hostile input visits each byte at
// most twice, and stops at the limit however deep the input goes.
func TestNestingDepthLinear(t *testing.T) {
	for name, src := range map[string]string{
		"braces":      strings.Repeat("{a:", 1<<18),
		"in a string": `"` + strings.Repeat("{[(", 1<<18) + `"`,
		"hashes":      "#" + strings.Repeat(`"`+strings.Repeat("#", 100)+`\`, 1<<12),
		"raw string":  strings.Repeat("#", 1<<12) + `"` + strings.Repeat(`"`+strings.Repeat("#", 1<<12-1), 1<<6),
		"comment":     strings.Repeat("// {{{{\n", 1<<16),
		"labels":      strings.Repeat("a: ", 1<<16) + "1",
		"lines":       strings.Repeat("a:\n", 1<<16) + "1",
		"sums":        strings.Repeat("1 +\n", 1<<16) + "1",
	} {
		got, steps := modread.Depth([]byte(src), 1<<30)
		if steps > 2*len(src) {
			t.Errorf("%s: %d steps over %d bytes", name, steps, len(src))
		}
		if name == "braces" && got != 1<<18+1 { // the first brace, and each label
			t.Errorf("braces: depth %d, want %d", got, 1<<18+1)
		}
		if deep := name == "labels" || name == "lines" || name == "sums"; deep && got != 1<<16 {
			t.Errorf("%s: depth %d, want %d", name, got, 1<<16)
		} else if !deep && name != "braces" && got != 0 {
			t.Errorf("%s: depth %d, want 0", name, got)
		}
	}
	_, steps := modread.Depth([]byte(strings.Repeat("{a:", 1<<18)), 100)
	if steps > 101*3 {
		t.Errorf("the scan went %d steps past a limit of 100", steps)
	}
}
