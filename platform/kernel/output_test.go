package kernel_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"leasekit.dev/platform/kernel"
)

// jsonValue draws a value as encoding/json decodes one into an any,
// nested at most depth deep.
func jsonValue(depth int) *rapid.Generator[any] {
	return rapid.Custom(func(t *rapid.T) any {
		kinds := 4
		if depth > 0 {
			kinds = 6
		}
		switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
		case 0:
			return nil
		case 1:
			return rapid.Bool().Draw(t, "bool")
		case 2:
			return rapid.Float64().Filter(func(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }).Draw(t, "number")
		case 3:
			return rapid.String().Draw(t, "string")
		case 4:
			return rapid.SliceOfN(jsonValue(depth-1), 0, 4).Draw(t, "list")
		}
		return rapid.MapOfN(rapid.String(), jsonValue(depth-1), 0, 4).Draw(t, "map")
	})
}

// renderOutput draws a RenderOutput whose slices and Objects may be nil,
// empty or full.
func renderOutput() *rapid.Generator[kernel.RenderOutput] {
	return rapid.Custom(func(t *rapid.T) kernel.RenderOutput {
		out := kernel.RenderOutput{Instance: rapid.String().Draw(t, "instance")}
		if rapid.Bool().Draw(t, "resources") {
			out.Resources = []kernel.Resource{}
			for range rapid.IntRange(0, 3).Draw(t, "nresources") {
				r := kernel.Resource{Component: rapid.String().Draw(t, "component"),
					Kind: rapid.String().Draw(t, "kind"), Name: rapid.String().Draw(t, "name")}
				if rapid.Bool().Draw(t, "object") {
					r.Object = rapid.MapOfN(rapid.String(), jsonValue(3), 0, 5).Draw(t, "fields")
				}
				out.Resources = append(out.Resources, r)
			}
		}
		if rapid.Bool().Draw(t, "diagnostics") {
			out.Diagnostics = rapid.SliceOfN(rapid.Custom(func(t *rapid.T) kernel.Diagnostic {
				return kernel.Diagnostic{Severity: rapid.String().Draw(t, "severity"), Message: rapid.String().Draw(t, "message"),
					Path: rapid.String().Draw(t, "path"), InstanceVersion: rapid.String().Draw(t, "iv"),
					PlatformVersion: rapid.String().Draw(t, "pv"), Newer: rapid.Bool().Draw(t, "newer")}
			}), 0, 3).Draw(t, "diags")
		}
		return out
	})
}

// roundTrip returns out's binary encoding and what it decodes to, failing
// t at an error of either.
func roundTrip(t interface {
	Helper()
	Fatal(args ...any)
}, out kernel.RenderOutput) ([]byte, kernel.RenderOutput) {
	t.Helper()
	data, err := out.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var got kernel.RenderOutput
	if err := got.UnmarshalBinary(data); err != nil {
		t.Fatal(err)
	}
	return data, got
}

// TestRenderOutputBinaryRoundTrip: every output decodes to one deeply
// equal to it, nil and empty told apart, and no prefix of its encoding
// decodes, each leaving the output it decodes into as it was.
func TestRenderOutputBinaryRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		out := renderOutput().Draw(t, "out")
		data, got := roundTrip(t, out)
		if !reflect.DeepEqual(got, out) {
			t.Fatalf("decoded %#v, want %#v", got, out)
		}
		for n := range len(data) {
			kept := kernel.RenderOutput{Instance: "kept"}
			if err := kept.UnmarshalBinary(data[:n]); err == nil {
				t.Fatalf("the first %d of %d bytes decode", n, len(data))
			}
			if !reflect.DeepEqual(kept, kernel.RenderOutput{Instance: "kept"}) {
				t.Fatalf("a failed decoding changed the output: %#v", kept)
			}
		}
	})
}

// TestRenderOutputBinaryOfARender: a render's output decodes equal to it,
// and the decoding shares no byte with the data it read.
func TestRenderOutputBinaryOfARender(t *testing.T) {
	k := kernel.New()
	p, err := k.BuildPlatform(context.Background(), generated(t, acme))
	if err != nil {
		t.Fatal(err)
	}
	out, err := k.Render(context.Background(), shop(p, "v1.5.0", 3))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Diagnostics) == 0 {
		t.Fatal("no diagnostic to encode")
	}
	data, got := roundTrip(t, out)
	clear(data)
	if !reflect.DeepEqual(got, out) {
		t.Fatalf("decoded %#v, want %#v", got, out)
	}
}

// TestRenderOutputBinaryRefuses: MarshalBinary refuses what JSON does not
// decode into an any, and nesting past 10,000, naming it.
func TestRenderOutputBinaryRefuses(t *testing.T) {
	deep := any("x")
	for range 10001 {
		deep = []any{deep}
	}
	for name, v := range map[string]struct {
		value any
		want  string
	}{
		"int":    {1, "type int"},
		"NaN":    {math.NaN(), "NaN"},
		"Inf":    {math.Inf(-1), "-Inf"},
		"struct": {struct{}{}, "type struct"},
		"deep":   {deep, "nested more than 10000 deep"},
	} {
		out := kernel.RenderOutput{Resources: []kernel.Resource{{Component: "web", Object: map[string]any{"spec": v.value}}}}
		if _, err := out.MarshalBinary(); err == nil || !strings.Contains(err.Error(), v.want) || !strings.HasPrefix(err.Error(), "kernel: ") {
			t.Errorf("%s: %v, want an error naming %q", name, err, v.want)
		}
	}
}

// TestRenderOutputBinaryHostile: data no MarshalBinary wrote, as a worker
// that is not what it should be may send, fails to decode with an error
// saying what is wrong, without a panic, a crash or an allocation sized
// by a count the data claims.
func TestRenderOutputBinaryHostile(t *testing.T) {
	uv := func(b []byte, n uint64) []byte { return binary.AppendUvarint(b, n) }
	str := func(b []byte, s string) []byte { return append(uv(b, uint64(len(s))), s...) }
	// head is a valid output up to its first resource's Object.
	head := str(uv(str([]byte{1}, "shop"), 2), "web")
	head = str(str(head, "Deployment"), "shop-web")
	deep := append([]byte(nil), head...)
	for range 20000 {
		deep = append(deep, 5, 1) // a list of one
	}
	for name, c := range map[string]struct {
		data []byte
		want string
	}{
		"empty":               {nil, "truncated"},
		"format":              {[]byte{2}, "format 2"},
		"resources":           {uv(str([]byte{1}, "shop"), 1<<60), "more than the bytes left hold"},
		"diagnostics":         {uv(uv(str([]byte{1}, "shop"), 0), math.MaxUint64), "more than the bytes left hold"},
		"string":              {uv([]byte{1}, 1<<40), "more than are left"},
		"varint":              {append([]byte{1}, bytes.Repeat([]byte{0xff}, 11)...), "overflows"},
		"list":                {uv(append(bytes.Clone(head), 6), 1<<50), "more than the bytes left hold"},
		"tag":                 {append(bytes.Clone(head), 7), "unknown tag 7"},
		"NaN":                 {binary.BigEndian.AppendUint64(append(append(append(bytes.Clone(head), 6, 1), str(nil, "n")...), 3), math.Float64bits(math.NaN())), "not finite"},
		"not a map":           {append(bytes.Clone(head), 4, 0), "not a map"},
		"deep":                {deep, "nested more than 10000 deep"},
		"bool":                {append(uv(uv(str([]byte{1}, "shop"), 0), 2), append(bytes.Repeat([]byte{0}, 5), 9)...), "a bool that is neither"},
		"bytes after the end": {append(uv(uv(str([]byte{1}, "shop"), 0), 0), 0), "bytes after the end"},
	} {
		out := kernel.RenderOutput{Instance: "kept"}
		err := out.UnmarshalBinary(c.data)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "kernel: render output: ") {
			t.Errorf("%s: %v, want an error naming %q", name, err, c.want)
		}
		if out.Instance != "kept" || out.Resources != nil {
			t.Errorf("%s: a failed decoding changed the output: %#v", name, out)
		}
	}
}

// FuzzRenderOutputUnmarshal: no data panics the decoder, and whatever
// decodes encodes and decodes again to an equal output.
func FuzzRenderOutputUnmarshal(f *testing.F) {
	out := kernel.RenderOutput{Instance: "shop", Resources: []kernel.Resource{{Component: "web", Kind: "Deployment", Name: "shop-web",
		Object: map[string]any{"spec": map[string]any{"replicas": 2.0, "ports": []any{80.0, "http", true, nil}}}}},
		Diagnostics: []kernel.Diagnostic{{Severity: "warning", Newer: true}}}
	data, err := out.MarshalBinary()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add([]byte{1, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		var out kernel.RenderOutput
		if out.UnmarshalBinary(data) != nil {
			return
		}
		again, err := out.MarshalBinary()
		if err != nil {
			t.Fatalf("a decoded output does not encode: %v", err)
		}
		var got kernel.RenderOutput
		if err := got.UnmarshalBinary(again); err != nil || !reflect.DeepEqual(got, out) {
			t.Fatalf("decoded again %#v, %v; want %#v", got, err, out)
		}
	})
}

// TestRenderOutputClone: a clone is deeply equal to its output, nil and
// empty told apart, and shares no map, list or slice with it: a change
// to every one of the clone's leaves the output as it was.
func TestRenderOutputClone(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		out := renderOutput().Draw(t, "out")
		_, was := roundTrip(t, out) // out as it is, shared with nothing
		c := out.Clone()
		if !reflect.DeepEqual(c, out) {
			t.Fatalf("cloned %#v, want %#v", c, out)
		}
		for i := range c.Resources {
			c.Resources[i].Name += "changed"
			mutate(c.Resources[i].Object)
		}
		for i := range c.Diagnostics {
			c.Diagnostics[i].Message += "changed"
		}
		if !reflect.DeepEqual(out, was) {
			t.Fatalf("a change to the clone changed the output: %#v, was %#v", out, was)
		}
	})
}

// mutate changes every map and list in v, deepest first.
func mutate(v any) {
	switch v := v.(type) {
	case map[string]any:
		for _, x := range v {
			mutate(x)
		}
		if v != nil {
			v["\x00changed"] = true
		}
	case []any:
		for i, x := range v {
			mutate(x)
			v[i] = "changed"
		}
	}
}
