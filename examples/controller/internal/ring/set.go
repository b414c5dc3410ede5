package ring

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Field is the object field a [Set]'s [Set.Selector] hashes, in the API
// server's spelling.
const Field = "object.metadata.uid"

// Hash returns the 64-bit FNV-1a hash of uid's bytes: the hash the API
// server's shardRange(object.metadata.uid, …) compares with its bounds.
func Hash(uid string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(uid))
	return h.Sum64()
}

// A Span is the hashes from Lo to Hi, both included (Lo ≤ Hi).
type Span struct{ Lo, Hi uint64 }

// A Set is a set of hashes: its spans sorted, disjoint and apart (two
// spans never touch). The zero Set is empty. Sets are values: no method
// changes its receiver.
type Set []Span

// Full returns the whole hash space.
func Full() Set { return Set{{0, math.MaxUint64}} }

// Of returns the set of the hashes in any of spans; a span whose Lo is
// past its Hi is empty.
func Of(spans ...Span) Set {
	s := make([]Span, 0, len(spans))
	for _, sp := range spans {
		if sp.Lo <= sp.Hi {
			s = append(s, sp)
		}
	}
	slices.SortFunc(s, func(a, b Span) int {
		switch {
		case a.Lo < b.Lo:
			return -1
		case a.Lo > b.Lo:
			return 1
		}
		return 0
	})
	var out Set
	for _, sp := range s {
		if n := len(out); n > 0 && (out[n-1].Hi == math.MaxUint64 || sp.Lo <= out[n-1].Hi+1) {
			out[n-1].Hi = max(out[n-1].Hi, sp.Hi)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// Empty reports whether s holds no hash.
func (s Set) Empty() bool { return len(s) == 0 }

// Contains reports whether h is in s.
func (s Set) Contains(h uint64) bool {
	i, _ := slices.BinarySearchFunc(s, h, func(sp Span, h uint64) int {
		switch {
		case sp.Hi < h:
			return -1
		case sp.Lo > h:
			return 1
		}
		return 0
	})
	return i < len(s) && s[i].Lo <= h && h <= s[i].Hi
}

// Union returns the hashes in s or t.
func (s Set) Union(t Set) Set { return Of(append(slices.Clone(s), t...)...) }

// Minus returns the hashes in s and not in t.
func (s Set) Minus(t Set) Set {
	var out []Span
	for _, sp := range s {
		lo := sp.Lo
		done := false
		for _, cut := range t {
			if cut.Hi < lo || cut.Lo > sp.Hi {
				continue
			}
			if cut.Lo > lo {
				out = append(out, Span{lo, cut.Lo - 1})
			}
			if cut.Hi >= sp.Hi {
				done = true
				break
			}
			lo = cut.Hi + 1
		}
		if !done {
			out = append(out, Span{lo, sp.Hi})
		}
	}
	return Of(out...)
}

// Intersect returns the hashes in both s and t.
func (s Set) Intersect(t Set) Set { return s.Minus(Full().Minus(t)) }

// Overlaps reports whether some hash is in both s and t.
func (s Set) Overlaps(t Set) bool { return !s.Intersect(t).Empty() }

// Equal reports whether s and t hold the same hashes.
func (s Set) Equal(t Set) bool { return slices.Equal(Of(s...), Of(t...)) }

// Fraction returns the share of the hash space s holds, from 0 to 1.
func (s Set) Fraction() float64 {
	var f float64
	for _, sp := range s {
		f += (float64(sp.Hi-sp.Lo) + 1) / (1 << 64)
	}
	return f
}

// end spells the exclusive end after hi as the API server parses a
// shardRange bound: 0x and 16 lower-case hex digits, or
// 0x10000000000000000 for 2^64.
func end(hi uint64) string {
	if hi == math.MaxUint64 {
		return "0x10000000000000000"
	}
	return fmt.Sprintf("0x%016x", hi+1)
}

// String spells s as its spans, each [start, end) with end exclusive, in
// the API server's spelling of a bound, separated by spaces:
// "[0x0000000000000000,0x8000000000000000)". The empty set is "".
// [Parse] reads it back.
func (s Set) String() string {
	parts := make([]string, len(s))
	for i, sp := range s {
		parts[i] = fmt.Sprintf("[0x%016x,%s)", sp.Lo, end(sp.Hi))
	}
	return strings.Join(parts, " ")
}

// MaxSelectorRanges is the most spans a [Set.Selector] may have for the
// API server to accept it. The server (k8s.io/apiserver v0.37.2,
// pkg/sharding.Parse) parses a shardSelector with cel-go's parser at its
// default limits, of which the one a chain of shardRange calls meets is
// the expression's size, 100,000 code points: a span spells 75 of them
// (76 for the end 2^64), and " || " 4 more. Such a selector takes 125 KB
// of a list's or a watch's query, within the 1 MiB the server reads of a
// request's head (pkg/server's MaxHeaderBytes).
const MaxSelectorRanges = 1265

// Selector returns the shard selector of s for ListOptions.ShardSelector:
// one shardRange(object.metadata.uid, 'start', 'end') per span, joined
// with " || ". The empty set has no selector: it returns "", which the
// API server reads as no selector at all, every object. The API server
// refuses the selector of a set of more than [MaxSelectorRanges] spans.
func (s Set) Selector() string {
	parts := make([]string, len(s))
	for i, sp := range s {
		parts[i] = fmt.Sprintf("shardRange(%s, '0x%016x', '%s')", Field, sp.Lo, end(sp.Hi))
	}
	return strings.Join(parts, " || ")
}

// Parse reads a set spelled as [Set.String] spells it. It refuses a
// bound that is not 0x and 16 lower-case hex digits (or
// 0x10000000000000000 as an end), a span that is empty, and spans out
// of order or touching, naming the span and the rule.
func Parse(str string) (Set, error) {
	var s Set
	for _, part := range strings.Fields(str) {
		inner, ok := strings.CutPrefix(part, "[")
		if ok {
			inner, ok = strings.CutSuffix(inner, ")")
		}
		a, b, ok2 := strings.Cut(inner, ",")
		if !ok || !ok2 {
			return nil, fmt.Errorf("ring: span %q: must be [start,end)", part)
		}
		lo, err := bound(a, false)
		if err != nil {
			return nil, fmt.Errorf("ring: span %q: start: %w", part, err)
		}
		hiEx, err := bound(b, true)
		if err != nil {
			return nil, fmt.Errorf("ring: span %q: end: %w", part, err)
		}
		// hiEx is end-1 (an end of 2^64 reads as MaxUint64).
		if hiEx < lo {
			return nil, fmt.Errorf("ring: span %q: start must be below end", part)
		}
		if n := len(s); n > 0 && (s[n-1].Hi == math.MaxUint64 || lo <= s[n-1].Hi+1) {
			return nil, fmt.Errorf("ring: span %q: spans must be in order and apart", part)
		}
		s = append(s, Span{lo, hiEx})
	}
	return s, nil
}

// bound reads one bound; an end is returned less one, so that 2^64 fits.
func bound(str string, isEnd bool) (uint64, error) {
	if isEnd && str == "0x10000000000000000" {
		return math.MaxUint64, nil
	}
	hex, ok := strings.CutPrefix(str, "0x")
	if !ok || len(hex) != 16 || strings.ToLower(hex) != hex {
		return 0, fmt.Errorf("%q: must be 0x and 16 lower-case hex digits", str)
	}
	v, err := strconv.ParseUint(hex, 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: must be 0x and 16 lower-case hex digits", str)
	}
	if isEnd {
		if v == 0 {
			return 0, fmt.Errorf("%q: an end must be above 0", str)
		}
		return v - 1, nil
	}
	return v, nil
}
