package ring

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	apisharding "k8s.io/apimachinery/pkg/sharding"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/sharding"
	"pgregory.net/rapid"
)

// points draws hashes near the interesting ones: the ends of the space,
// the bounds of spans, and anywhere.
func point() *rapid.Generator[uint64] {
	return rapid.OneOf(
		rapid.SampledFrom([]uint64{0, 1, math.MaxUint64 - 1, math.MaxUint64, 1 << 63, 1<<63 - 1}),
		rapid.Uint64Range(0, 64),
		rapid.Uint64Range(math.MaxUint64-64, math.MaxUint64),
		rapid.Uint64(),
	)
}

func set() *rapid.Generator[Set] { return setOf(4) }

// setOf draws a set of up to n spans (fewer where they touch).
func setOf(n int) *rapid.Generator[Set] {
	return rapid.Custom(func(t *rapid.T) Set {
		n := rapid.IntRange(0, n).Draw(t, "spans")
		var spans []Span
		for range n {
			a, b := point().Draw(t, "a"), point().Draw(t, "b")
			spans = append(spans, Span{min(a, b), max(a, b)})
		}
		return Of(spans...)
	})
}

// TestSetModel holds the set operations to the definition of each on
// single hashes, and every result to the Set invariant: spans sorted,
// disjoint and apart.
func TestSetModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		a, b := set().Draw(t, "a"), set().Draw(t, "b")
		union, minus, inter := a.Union(b), a.Minus(b), a.Intersect(b)
		for _, s := range []Set{a, b, union, minus, inter} {
			for i, sp := range s {
				if sp.Lo > sp.Hi {
					t.Fatalf("%v: span %d empty", s, i)
				}
				if i > 0 && (s[i-1].Hi == math.MaxUint64 || sp.Lo <= s[i-1].Hi+1) {
					t.Fatalf("%v: spans %d and %d not in order and apart", s, i-1, i)
				}
			}
		}
		var probes []uint64
		for _, s := range []Set{a, b} {
			for _, sp := range s {
				probes = append(probes, sp.Lo, sp.Hi, sp.Lo-1, sp.Hi+1)
			}
		}
		probes = append(probes, rapid.SliceOf(point()).Draw(t, "probes")...)
		for _, h := range probes {
			inA, inB := a.Contains(h), b.Contains(h)
			if union.Contains(h) != (inA || inB) || minus.Contains(h) != (inA && !inB) || inter.Contains(h) != (inA && inB) {
				t.Fatalf("hash %#x: in a %v, in b %v; union %v, minus %v, intersect %v", h, inA, inB, union.Contains(h), minus.Contains(h), inter.Contains(h))
			}
		}
		if a.Overlaps(b) != !inter.Empty() {
			t.Fatalf("Overlaps %v, intersection %v", a.Overlaps(b), inter)
		}
		got, err := Parse(a.String())
		if err != nil || !got.Equal(a) {
			t.Fatalf("Parse(%q) = %v, %v; want %v", a.String(), got, err, a)
		}
	})
}

// TestTargetsCoverOnce: any identities' targets cover the space exactly
// once, contiguous and in the order of the identities.
func TestTargetsCoverOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := rapid.SliceOfN(rapid.StringMatching(`[a-e]{1,2}`), 1, 12).Draw(t, "ids")
		checkPartition(t, Targets(ids))
	})
}

// TestAssignCoversOnce: whatever the claims (overlapping, partial parts,
// of members not listed, the whole space), the targets cover the space
// exactly once, and they are a fixed point: claimed as they are, they
// stay as they are.
func TestAssignCoversOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		ids := rapid.SliceOfN(rapid.StringMatching(`[a-e]{1,2}`), 1, 12).Draw(t, "ids")
		claims := rapid.MapOf(rapid.StringMatching(`[a-f]{1,2}`), rapid.OneOf(set(), setOf(40), rapid.Just(Full()))).Draw(t, "claims")
		got := Assign(ids, claims)
		checkPartition(t, got)
		if again := Assign(ids, got); !sameTargets(again, got) {
			t.Fatalf("not a fixed point: %v, then %v", got, again)
		}
	})
}

// checkPartition fails t unless the sets of parts cover the space exactly
// once.
func checkPartition(t interface{ Fatalf(string, ...any) }, parts map[string]Set) {
	var all Set
	var total float64
	for id, s := range parts {
		if all.Overlaps(s) {
			t.Fatalf("%s's %v overlaps another's: %v", id, s, parts)
		}
		all = all.Union(s)
		total += s.Fraction()
	}
	if !all.Equal(Full()) {
		t.Fatalf("the parts cover %v, not the whole space: %v", all, parts)
	}
}

// TestHashIsTheAPIServers holds Hash and Selector to the API server's own
// code: the hash of a UID is apimachinery's HashField, every selector
// parses with the apiserver's parser, and it matches an object exactly
// when the set contains its UID's hash.
func TestHashIsTheAPIServers(t *testing.T) {
	// A known value: FNV-1a 64 of "" is its offset basis.
	if got := Hash(""); got != 0xcbf29ce484222325 {
		t.Fatalf(`Hash("") = %#x, want the FNV-1a offset basis 0xcbf29ce484222325`, got)
	}
	rapid.Check(t, func(t *rapid.T) {
		uids := rapid.SliceOfN(rapid.OneOf(rapid.String(), rapid.StringMatching(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)), 1, 20).Draw(t, "uids")
		// A set drawn anywhere, or one whose bounds sit on, before and
		// after the UIDs' hashes, where a comparison off by one differs.
		s := rapid.OneOf(set(), setOf(2*rangesBound), rapid.Custom(func(t *rapid.T) Set {
			var spans []Span
			for _, uid := range uids {
				h := Hash(uid) + uint64(rapid.IntRange(-1, 1).Draw(t, "lo"))
				w := rapid.SampledFrom([]uint64{0, 1, 1 << 40}).Draw(t, "width")
				if rapid.Bool().Draw(t, "ends there") {
					spans = append(spans, Span{h - min(w, h), h})
				} else {
					spans = append(spans, Span{h, h + min(w, math.MaxUint64-h)})
				}
			}
			return Of(spans...)
		})).Draw(t, "set")
		for _, uid := range uids {
			if got, want := fmt.Sprintf("%016x", Hash(uid)), apisharding.HashField(uid); got != want {
				t.Fatalf("Hash(%q) = %s, the API server's %s", uid, got, want)
			}
		}
		if s.Empty() {
			if s.Selector() != "" {
				t.Fatalf("the empty set's selector is %q", s.Selector())
			}
			return
		}
		sel, err := sharding.Parse(s.Selector())
		if err != nil {
			t.Fatalf("the API server refuses %q: %v", s.Selector(), err)
		}
		for _, uid := range uids {
			obj := &unstructured.Unstructured{}
			obj.SetUID(types.UID(uid))
			ok, err := sel.Matches(obj)
			if err != nil {
				t.Fatal(err)
			}
			if ok != s.Contains(Hash(uid)) {
				t.Fatalf("%q: the API server matches uid %q (hash %#x): %v; Contains: %v", s.Selector(), uid, Hash(uid), ok, !ok)
			}
		}
	})
}

// TestSelectorWithinTheServersLimit: the API server parses a selector of
// MaxSelectorRanges spans, and refuses one of a span more.
func TestSelectorWithinTheServersLimit(t *testing.T) {
	spans := func(n int) Set {
		s := make(Set, n)
		for i := range s {
			lo := uint64(i) << 50
			s[i] = Span{lo, lo + 1<<49}
		}
		s[n-1].Hi = math.MaxUint64 // the longest spelling of an end
		return s
	}
	for _, n := range []int{1, rangesBound, MaxSelectorRanges} {
		if _, err := sharding.Parse(spans(n).Selector()); err != nil {
			t.Errorf("the API server refuses a selector of %d ranges: %v", n, err)
		}
	}
	if _, err := sharding.Parse(spans(MaxSelectorRanges + 1).Selector()); err == nil {
		t.Errorf("the API server parses a selector of %d ranges: MaxSelectorRanges is not its limit", MaxSelectorRanges+1)
	}
}

// TestParseRefuses names the span and the rule for each malformed set.
func TestParseRefuses(t *testing.T) {
	for _, bad := range []string{
		"[0x0,0x8000000000000000)",
		"[0x0000000000000000,0x8000000000000000]",
		"0x0000000000000000,0x8000000000000000",
		"[0x8000000000000000,0x8000000000000000)",
		"[0x0000000000000000,0x0000000000000000)",
		"[0x000000000000000A,0x8000000000000000)",
		"[0x0000000000000000,0x20000000000000000)",
		"[0x0000000000000010,0x0000000000000020) [0x0000000000000000,0x0000000000000008)",
		"[0x0000000000000000,0x0000000000000010) [0x0000000000000010,0x0000000000000020)",
	} {
		if s, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, s)
		} else if !strings.Contains(err.Error(), "ring: span") {
			t.Errorf("Parse(%q): %v, want it to name the span", bad, err)
		}
	}
}
