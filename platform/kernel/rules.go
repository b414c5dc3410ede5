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
	cc   *cue.Context // the values' own
	v    cue.Value    // as written: positions
	ev   cue.Value    // under the schema: values
	errs error
}

func (c *checker) fail(path []string, format string, args ...any) {
	c.errs = joinCUE(c.errs, fieldError(c.v, path, format, args...))
}

// str checks the concrete string at path with rule, if there is one there;
// a missing or non-string value is left for the schema to report.
func (c *checker) str(path []string, rule func(string) string) {
	if s, ok := c.strAt(path); ok {
		if r := rule(s); r != "" {
			c.fail(path, "%q %s", s, r)
		}
	}
}

// strAt returns the string at path as the schema evaluates it or, in a
// module the schema refuses there, as written, narrowed to a string as
// the schema narrows it, so that every problem is told.
func (c *checker) strAt(path []string) (string, bool) {
	if s, err := lookup(c.ev, path...).String(); err == nil {
		return s, true
	}
	s, err := asString(c.cc, lookup(c.v, path...))
	return s, err == nil
}

// fieldsAt returns the fields of the struct at path, read as strAt reads
// a string.
func (c *checker) fieldsAt(path []string) map[string]cue.Value {
	if fields := structFields(lookup(c.ev, path...)); fields != nil {
		return fields
	}
	return structFields(lookup(c.v, path...))
}

// labels checks the keys and values of the label map at path.
func (c *checker) labels(path []string) {
	c.labelKeys(path, slices.Sorted(mapKeys(c.fieldsAt(path))))
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

// kinds checks the list of kinds at path, read as strAt reads a string.
func (c *checker) kinds(path []string) {
	l := lookup(c.ev, path...)
	if _, err := l.List(); err != nil {
		w := lookup(c.v, path...)
		l = w.Unify(c.cc.CompileString("[...string]"))
	}
	iter, err := l.List()
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
func checkPlatformValues(cc *cue.Context, v, u cue.Value) error {
	c := &checker{cc: cc, v: v, ev: u}
	c.str([]string{"name"}, rules.DNSLabel)
	c.str([]string{"type"}, rules.DNSLabel)
	c.labels([]string{"labels"})
	for _, path := range slices.Sorted(mapKeys(c.fieldsAt([]string{"catalogs"}))) {
		at := []string{"catalogs", path}
		if rule := rules.CatalogPath(path); rule != "" {
			c.fail(at, "catalog path %s", rule)
		} else if version, ok := c.strAt(append(at, "version")); ok {
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
	c := &checker{cc: w.cc, v: w.v, ev: w.ev}
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
