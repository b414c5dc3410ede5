package kernel

import (
	"slices"

	"cuelang.org/go/cue"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/token"
	"leasekit.dev/platform/internal/rules"
)

// A checker collects value-rule problems of one module, each a CUE error
// at the position of the offending field in v, the value as written. It
// checks each value as ev, the module evaluated under its schema, holds
// it: a default, or a disjunction the schema narrows, makes a value
// concrete only there.
type checker struct {
	v    cue.Value // as written: positions
	ev   cue.Value // under the schema: values
	errs error
}

func (c *checker) fail(path []string, format string, args ...any) {
	c.errs = joinCUE(c.errs, fieldError(c.v, path, format, args...))
}

// str checks the concrete string at path with rule, if there is one there;
// a missing or non-string value is left for the schema to report.
func (c *checker) str(path []string, rule func(string) string) {
	s, err := lookup(c.ev, path...).String()
	if err != nil {
		// An instance the schema refuses elsewhere: its values as written
		// still have their rules checked, so that every problem is told,
		// each narrowed to a string as the schema narrows it (*1 | "x" is
		// "x" there).
		w := lookup(c.v, path...)
		if s, err = w.Unify(w.Context().CompileString("string")).String(); err != nil {
			return
		}
	}
	if r := rule(s); r != "" {
		c.fail(path, "%q %s", s, r)
	}
}

// labels checks the keys and values of the label map at path.
func (c *checker) labels(path []string) {
	fields := structFields(lookup(c.ev, path...))
	if fields == nil {
		fields = structFields(lookup(c.v, path...))
	}
	c.labelKeys(path, slices.Sorted(mapKeys(fields)))
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
	iter, err := lookup(c.ev, path...).List()
	if err != nil {
		return
	}
	for i := 0; iter.Next(); i++ {
		if s, err := iter.Value().String(); err == nil {
			if r := rules.Kind(s); r != "" {
				at := cue.MakePath(append(strSels(path), cue.Index(i))...)
				pos := c.v.LookupPath(at).Pos()
				if !pos.IsValid() {
					pos = iter.Value().Pos()
				}
				c.errs = joinCUE(c.errs, &pathError{pos: pos, path: []string{at.String()}, msg: messagef("kind %q %s", s, r)})
			}
		}
	}
}

// checkPlatformValues checks the value rules of a platform v as u, v
// under #Platform, holds its values.
func checkPlatformValues(v, u cue.Value) error {
	c := &checker{v: v, ev: u}
	c.str([]string{"name"}, rules.DNSLabel)
	c.str([]string{"type"}, rules.DNSLabel)
	c.labels([]string{"labels"})
	for _, path := range slices.Sorted(mapKeys(structFields(lookup(u, "catalogs")))) {
		at := []string{"catalogs", path}
		if rule := rules.CatalogPath(path); rule != "" {
			c.fail(at, "catalog path %s", rule)
		} else if version, err := lookup(u, append(at, "version")...).String(); err == nil {
			// A version missing or not a string is left for the schema.
			if _, rule := rules.Catalog(path, version); rule != "" {
				c.fail(append(at, "version"), "%q %s", version, rule)
			}
		}
		c.kinds(append(at, "kinds"))
	}
	return c.errs
}

// checkInstanceValues checks the value rules of an instance as it
// evaluates under #Instance (see checker).
func checkInstanceValues(w writtenInstance) error {
	c := &checker{v: w.v, ev: w.ev}
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

// fieldError is a CUE error about the field at path (string labels) under
// v, at its position.
func fieldError(v cue.Value, path []string, format string, args ...any) error {
	cp := cue.MakePath(strSels(path)...)
	return &pathError{pos: lookup(v, path...).Pos(), path: []string{cp.String()}, msg: messagef(format, args...)}
}

func messagef(format string, args ...any) cueerrors.Message {
	return cueerrors.NewMessagef(format, args...)
}

// pathError is a CUE error at a position, about a path.
type pathError struct {
	pos  token.Pos
	path []string
	msg  cueerrors.Message
}

func (e *pathError) Position() token.Pos         { return e.pos }
func (e *pathError) InputPositions() []token.Pos { return nil }
func (e *pathError) Path() []string              { return e.path }
func (e *pathError) Msg() (string, []any)        { return e.msg.Msg() }
func (e *pathError) Error() string               { return e.msg.Error() }
