package kernel

import (
	"encoding/binary"
	"fmt"
	"math"
)

// RenderOutput is the result of a Render.
type RenderOutput struct {
	Instance    string       // the instance's name
	Resources   []Resource   // one per component, ordered by component name
	Diagnostics []Diagnostic // findings that did not fail the render, ordered by catalog path
}

// A Resource is one rendered component.
type Resource struct {
	Component string // the component's name in the instance
	Kind      string
	Name      string // metadata.name

	// Object is the whole resource: apiVersion, kind, metadata (name,
	// namespace, labels, annotations) and spec, as decoded JSON values.
	Object map[string]any
}

// A Diagnostic is a finding that did not fail the render.
type Diagnostic struct {
	Severity string // "warning"
	Message  string

	// For a catalog skew: the catalog, the version the instance requires,
	// the one the platform carries (which the render used), and whether
	// the instance's is newer (always, for a skew row).
	Path            string
	InstanceVersion string
	PlatformVersion string
	Newer           bool
}

// The binary form of a RenderOutput, as MarshalBinary writes it: a
// format byte, then the instance's name, the resources and the
// diagnostics. A string is a uvarint length and its bytes; a slice is a
// uvarint, 0 for nil and its length plus one otherwise, and its elements;
// a value of an Object is a tag and its data.
const outputFormat byte = 1

const (
	tagNil    byte = iota
	tagFalse       // false
	tagTrue        // true
	tagNumber      // a float64, 8 bytes big-endian
	tagString      // a string
	tagList        // a uvarint length, then the values
	tagMap         // a uvarint length, then each key (a string) and its value
)

// maxNesting is the deepest an Object's values may nest, in either
// direction: encoding/json's own bound on what it decodes.
const maxNesting = 10000

// MarshalBinary encodes o in a compact binary form that
// [RenderOutput.UnmarshalBinary] reads back into a RenderOutput equal to
// o, a nil slice or map told from an empty one. A Render's output always
// encodes. Every value of an Object must be one encoding/json decodes
// into an any (nil, a bool, a finite float64, a string, a []any or a
// map[string]any), nested at most 10,000 deep: any other fails with an
// error naming it. The encoding of a map follows its iteration order, so
// two encodings of one output may differ in bytes, never in length.
func (o RenderOutput) MarshalBinary() ([]byte, error) {
	b := appendString(append(make([]byte, 0, 512), outputFormat), o.Instance)
	b = appendCount(b, len(o.Resources), o.Resources == nil)
	var err error
	for _, r := range o.Resources {
		b = appendString(appendString(appendString(b, r.Component), r.Kind), r.Name)
		if b, err = appendValue(b, r.Object, 0); err != nil {
			return nil, fmt.Errorf("kernel: render output: resource %q: %w", r.Component, err)
		}
	}
	b = appendCount(b, len(o.Diagnostics), o.Diagnostics == nil)
	for _, d := range o.Diagnostics {
		b = appendString(appendString(b, d.Severity), d.Message)
		b = appendString(appendString(appendString(b, d.Path), d.InstanceVersion), d.PlatformVersion)
		b = appendBool(b, d.Newer)
	}
	return b, nil
}

// UnmarshalBinary decodes into o what MarshalBinary encoded. It trusts
// nothing in data: a count past the bytes left, a truncated or unknown
// value, a number that is not finite, nesting past 10,000, an Object
// that is not a map, or bytes after the end fail with an error saying
// which and where, and leave o as it was. It retains nothing of data.
func (o *RenderOutput) UnmarshalBinary(data []byte) error {
	d := &outputDecoder{s: string(data)}
	if f := d.byte(); d.err == nil && f != outputFormat {
		return fmt.Errorf("kernel: render output: format %d, not %d", f, outputFormat)
	}
	out := RenderOutput{Instance: d.string()}
	if n, ok := d.count(4); ok { // a resource takes at least 4 bytes
		out.Resources = make([]Resource, 0, n)
		for range n {
			r := Resource{Component: d.string(), Kind: d.string(), Name: d.string()}
			switch v := d.value(0).(type) {
			case map[string]any:
				r.Object = v
			case nil:
			default:
				d.fail("an Object that is not a map")
			}
			if d.err != nil {
				break
			}
			out.Resources = append(out.Resources, r)
		}
	}
	if n, ok := d.count(6); ok { // a diagnostic takes at least 6 bytes
		out.Diagnostics = make([]Diagnostic, 0, n)
		for range n {
			diag := Diagnostic{Severity: d.string(), Message: d.string(),
				Path: d.string(), InstanceVersion: d.string(), PlatformVersion: d.string()}
			diag.Newer = d.bool()
			if d.err != nil {
				break
			}
			out.Diagnostics = append(out.Diagnostics, diag)
		}
	}
	if d.err == nil && d.off != len(d.s) {
		d.fail("bytes after the end")
	}
	if d.err != nil {
		return d.err
	}
	*o = out
	return nil
}

// Clone returns a deep copy of o, deeply equal to it, nil slices and
// maps kept nil: its slices, and the maps and lists of each Object, are
// its own, so that a change to one leaves the other as it was. The values
// that cannot change, strings, numbers and bools, are shared, and so is a
// value of any other type, which no Render gives. It costs the maps and
// slices alone, a fraction of what UnmarshalBinary does.
func (o RenderOutput) Clone() RenderOutput {
	c := o
	if o.Resources != nil {
		c.Resources = make([]Resource, len(o.Resources))
		for i, r := range o.Resources {
			if r.Object != nil {
				r.Object = cloneValue(r.Object).(map[string]any)
			}
			c.Resources[i] = r
		}
	}
	if o.Diagnostics != nil {
		c.Diagnostics = append(make([]Diagnostic, 0, len(o.Diagnostics)), o.Diagnostics...)
	}
	return c
}

// cloneValue returns a copy of v whose maps and lists are its own.
func cloneValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		c := make(map[string]any, len(v))
		for k, x := range v {
			c[k] = cloneValue(x)
		}
		return c
	case []any:
		if v == nil {
			return v
		}
		c := make([]any, len(v))
		for i, x := range v {
			c[i] = cloneValue(x)
		}
		return c
	}
	return v
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendCount(b []byte, n int, isNil bool) []byte {
	if isNil {
		return append(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, tagTrue)
	}
	return append(b, tagFalse)
}

// appendValue appends v, a value at the given nesting, to b.
func appendValue(b []byte, v any, nesting int) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, tagNil), nil
	case bool:
		return appendBool(b, v), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("the number %v, which JSON cannot hold", v)
		}
		return binary.BigEndian.AppendUint64(append(b, tagNumber), math.Float64bits(v)), nil
	case string:
		return appendString(append(b, tagString), v), nil
	case []any:
		if nesting >= maxNesting {
			return nil, fmt.Errorf("values nested more than %d deep", maxNesting)
		}
		b = binary.AppendUvarint(append(b, tagList), uint64(len(v)))
		var err error
		for _, x := range v {
			if b, err = appendValue(b, x, nesting+1); err != nil {
				return nil, err
			}
		}
		return b, nil
	case map[string]any:
		if v == nil {
			return append(b, tagNil), nil // a nil Object
		}
		if nesting >= maxNesting {
			return nil, fmt.Errorf("values nested more than %d deep", maxNesting)
		}
		b = binary.AppendUvarint(append(b, tagMap), uint64(len(v)))
		var err error
		for k, x := range v {
			if b, err = appendValue(appendString(b, k), x, nesting+1); err != nil {
				return nil, err
			}
		}
		return b, nil
	}
	return nil, fmt.Errorf("a value of type %T, which encoding/json does not decode into an any", v)
}

// An outputDecoder reads what MarshalBinary wrote. Every string it
// returns is a part of s, one copy of the input: decoding allocates
// that copy, the maps and the slices, and no string of its own.
type outputDecoder struct {
	s   string
	off int
	err error
}

// fail records the first failure, at the current offset, and stops the
// decoding: every read after it returns a zero value.
func (d *outputDecoder) fail(what string) {
	if d.err == nil {
		d.err = fmt.Errorf("kernel: render output: %s at byte %d of %d", what, d.off, len(d.s))
	}
	d.off = len(d.s)
}

func (d *outputDecoder) byte() byte {
	if d.off >= len(d.s) {
		d.fail("truncated")
		return 0
	}
	c := d.s[d.off]
	d.off++
	return c
}

func (d *outputDecoder) uvarint() uint64 {
	var n uint64
	for shift := 0; ; shift += 7 {
		if d.err != nil {
			return 0
		}
		if shift > 63 {
			d.fail("a length that overflows")
			return 0
		}
		c := d.byte()
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return n
		}
	}
}

// count reads the count of a slice whose elements take at least min
// bytes each: ok is false for a nil slice and after a failure.
func (d *outputDecoder) count(min int) (int, bool) {
	n := d.uvarint()
	if n == 0 || d.err != nil {
		return 0, false
	}
	if n-1 > uint64((len(d.s)-d.off)/min) {
		d.fail(fmt.Sprintf("a count of %d, more than the bytes left hold", n-1))
		return 0, false
	}
	return int(n - 1), true
}

func (d *outputDecoder) string() string {
	n := d.uvarint()
	if n > uint64(len(d.s)-d.off) {
		d.fail(fmt.Sprintf("a string of %d bytes, more than are left", n))
		return ""
	}
	s := d.s[d.off : d.off+int(n)]
	d.off += int(n)
	return s
}

func (d *outputDecoder) bool() bool {
	switch d.byte() {
	case tagFalse:
		return false
	case tagTrue:
		return true
	}
	d.fail("a bool that is neither")
	return false
}

// value reads a value at the given nesting.
func (d *outputDecoder) value(nesting int) any {
	tag := d.byte()
	if d.err != nil {
		return nil
	}
	switch tag {
	case tagNil:
		return nil
	case tagFalse:
		return false
	case tagTrue:
		return true
	case tagNumber:
		if len(d.s)-d.off < 8 {
			d.fail("a truncated number")
			return nil
		}
		var u uint64
		for _, c := range []byte(d.s[d.off : d.off+8]) {
			u = u<<8 | uint64(c)
		}
		f := math.Float64frombits(u)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			d.fail("a number that is not finite")
			return nil
		}
		d.off += 8
		return f
	case tagString:
		return d.string()
	case tagList, tagMap:
		if nesting >= maxNesting {
			d.fail(fmt.Sprintf("values nested more than %d deep", maxNesting))
			return nil
		}
		min := 1 // a value takes at least 1 byte; a key and a value, 2
		if tag == tagMap {
			min = 2
		}
		n := d.uvarint()
		if d.err == nil && n > uint64((len(d.s)-d.off)/min) {
			d.fail(fmt.Sprintf("a length of %d, more than the bytes left hold", n))
		}
		if d.err != nil {
			return nil
		}
		if tag == tagList {
			l := make([]any, 0, n)
			for range n {
				l = append(l, d.value(nesting+1))
			}
			return l
		}
		m := make(map[string]any, n)
		for range n {
			k := d.string()
			m[k] = d.value(nesting + 1)
		}
		return m
	}
	d.off--
	d.fail(fmt.Sprintf("an unknown tag %d", tag))
	return nil
}
