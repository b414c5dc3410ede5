package dirlife

import (
	"math"
	"testing"
)

func TestIntCodecCanonical(t *testing.T) {
	c := IntCodec[int64]{Prefix: "gen-"}
	for _, n := range []int64{0, 1, 9, 10, 123456, -1, -42, math.MaxInt64, math.MinInt64} {
		name := c.Format(n)
		if got, ok := c.Parse(name); !ok || got != n {
			t.Fatalf("Parse(Format(%d)=%q) = %d, %v", n, name, got, ok)
		}
	}
	for _, name := range []string{"gen-", "gen-010", "gen-00", "gen-+1", "gen--0", "gen-1a", "gen- 1",
		"gen-9223372036854775808", "gen1", "GEN-1", "gen-1.0", "gen-１", "x-1"} {
		if id, ok := c.Parse(name); ok {
			t.Fatalf("Parse(%q) = %d, true; want false", name, id)
		}
	}
	u := IntCodec[uint8]{Prefix: "v"}
	if _, ok := u.Parse("v256"); ok {
		t.Fatal("IntCodec[uint8] parsed v256")
	}
	if _, ok := u.Parse("v-1"); ok {
		t.Fatal("IntCodec[uint8] parsed v-1")
	}
	if got, ok := u.Parse("v255"); !ok || got != 255 {
		t.Fatalf("Parse(v255) = %d, %v", got, ok)
	}
}

// FuzzCodecs: Parse(Format(x)) == x, and whatever Parse accepts, Format
// reproduces exactly.
func FuzzCodecs(f *testing.F) {
	for _, s := range []string{"", "gen-1", "gen-010", "a/b", "..", "%2F", "gen--0", ".x", "\x00", "Con", "nul.txt", "a.", "lpt¹"} {
		f.Add(s, int64(len(s))-3)
	}
	ints := IntCodec[int64]{Prefix: "gen-"}
	f.Fuzz(func(t *testing.T, s string, n int64) {
		if got, ok := ints.Parse(ints.Format(n)); !ok || got != n {
			t.Fatalf("int round trip %d: %d, %v", n, got, ok)
		}
		if id, ok := ints.Parse(s); ok && ints.Format(id) != s {
			t.Fatalf("IntCodec parsed %q to %d, which formats as %q", s, id, ints.Format(id))
		}
	})
}
