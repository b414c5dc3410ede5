package kernel

import (
	"fmt"
	"slices"

	"cuelang.org/go/cue"
	"leasekit.dev/platform/internal/rules"
)

// A checker collects value-rule problems of one module, each a CUE error
// at the position of the offending field in v, the value as written. It
// checks each value as CUE evaluates the module under its schema: as
// written where it is a concrete string there, and otherwise as eval, the
// module evaluated under its schema, gives it (a default, or a disjunction
// the schema narrows, is concrete only there).
type checker struct {
	v    cue.Value
	eval func() cue.Value // nil: the values as written are all there is
	errs error
}

// stringAt returns the string at path, as written or, when it is not a
// concrete string there, as the module evaluates; false when there is
// none, which is left for the schema to report.
func (c *checker) stringAt(path []string) (string, bool) {
	return resolvedString(c.v, c.eval, path...)
}

// resolvedString returns the concrete string at path in v, the module as
// written, or, when v holds something else there, in eval's value: the
// module evaluated under its schema.
func resolvedString(v cue.Value, eval func() cue.Value, path ...string) (string, bool) {
	w := lookup(v, path...)
	if s, err := w.String(); err == nil {
		return s, true
	}
	if !w.Exists() || eval == nil {
		return "", false
	}
	s, err := lookup(eval(), path...).String()
	return s, err == nil
}

func (c *checker) fail(path []string, format string, args ...any) {
	c.errs = joinCUE(c.errs, fieldError(c.v, path, format, args...))
}

// str checks the concrete string at path with rule, if there is one there;
// a missing or non-string value is left for the schema to report.
func (c *checker) str(path []string, rule func(string) string) {
	s, ok := c.stringAt(path)
	if !ok {
		return
	}
	if r := rule(s); r != "" {
		c.fail(path, "%q %s", s, r)
	}
}

// labels checks the keys and values of the label map at path.
func (c *checker) labels(path []string) {
	c.labelKeys(path, slices.Sorted(mapKeys(structFields(lookup(c.v, path...)))))
}

// labelKeys checks the given keys, and their values, of the label map at
// path.
func (c *checker) labelKeys(path []string, keys []string) {
	for _, k := range keys {
		at := append(slices.Clone(path), k)
		if r := rules.LabelKey(k); r != "" {
			c.fail(at, "label key %q %s", k, r)
			continue
		}
		c.str(at, rules.LabelValue)
	}
}

// kinds checks the list of kinds at path.
func (c *checker) kinds(path []string) {
	list := lookup(c.v, path...)
	if !allStrings(list) && list.Exists() && c.eval != nil {
		list = lookup(c.eval(), path...) // as written, a default or a disjunction
	}
	iter, err := list.List()
	if err != nil {
		return
	}
	for i := 0; iter.Next(); i++ {
		if s, err := iter.Value().String(); err == nil {
			if r := rules.Kind(s); r != "" {
				c.errs = joinCUE(c.errs, &pathError{pos: iter.Value().Pos(), path: []string{cue.MakePath(strSels(path)...).String() + fmt.Sprintf("[%d]", i)},
					msg: messagef("kind %q %s", s, r)})
			}
		}
	}
}

// allStrings reports whether v is a list of concrete strings.
func allStrings(v cue.Value) bool {
	iter, err := v.List()
	if err != nil {
		return false
	}
	for iter.Next() {
		if _, err := iter.Value().String(); err != nil {
			return false
		}
	}
	return true
}

// checkPlatformValues checks the value rules of a platform v, as written
// and as u, v under #Platform, evaluates it.
func checkPlatformValues(v, u cue.Value) error {
	c := &checker{v: v, eval: func() cue.Value { return u }}
	c.str([]string{"name"}, rules.DNSLabel)
	c.str([]string{"type"}, rules.DNSLabel)
	c.labels([]string{"labels"})
	for _, path := range slices.Sorted(mapKeys(structFields(lookup(v, "catalogs")))) {
		at := []string{"catalogs", path}
		if rule := rules.CatalogPath(path); rule != "" {
			c.fail(at, "catalog path %s", rule)
		} else if version, ok := c.stringAt(append(at, "version")); ok {
			// A version missing or not a string is left for the schema.
			if _, rule := rules.Catalog(path, version); rule != "" {
				c.fail(append(at, "version"), "%q %s", version, rule)
			}
		}
		c.kinds(append(at, "kinds"))
	}
	return c.errs
}

// checkInstanceValues checks the value rules of an instance as written
// and, where it holds no concrete string, as it evaluates (see checker).
func checkInstanceValues(w writtenInstance) error {
	c := &checker{v: w.v, eval: w.eval}
	c.str([]string{"name"}, rules.DNSLabel)
	c.str([]string{"namespace"}, rules.DNSLabel)
	c.labels([]string{"labels"})
	for _, comp := range w.components {
		at := []string{"components", comp.name}
		if r := rules.DNSLabel(comp.name); r != "" {
			c.fail(at, "component name %q %s", comp.name, r)
		}
		if comp.kind != "" {
			if r := rules.Kind(comp.kind); r != "" {
				c.fail(append(at, "kind"), "%q %s", comp.kind, r)
			}
		}
		c.labelKeys(append(at, "labels"), comp.labels)
	}
	return c.errs
}

func strSels(path []string) []cue.Selector {
	sels := make([]cue.Selector, len(path))
	for i, p := range path {
		sels[i] = cue.Str(p)
	}
	return sels
}

func lookup(v cue.Value, path ...string) cue.Value {
	return v.LookupPath(cue.MakePath(strSels(path)...))
}
