package dirlife

import (
	"math"
	"strings"
	"testing"
	"unicode"

	"pgregory.net/rapid"
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

// TestStringCodecNames pins the escaping: upper case, a trailing dot and
// device names are escaped; lower case and inner dots are not.
func TestStringCodecNames(t *testing.T) {
	for _, c := range []struct {
		codec    StringCodec
		id, name string
	}{
		{StringCodec{}, "a", "a"},
		{StringCodec{}, "A", "%41"},
		{StringCodec{}, "Gen-1", "%47en-1"},
		{StringCodec{}, "a.b", "a.b"},
		{StringCodec{}, "a.", "a%2E"},
		{StringCodec{}, ".a", "%2Ea"},
		{StringCodec{}, "con", "%63on"},
		{StringCodec{}, "nul.txt", "%6Eul.txt"},
		{StringCodec{}, "com1", "%63om1"},
		{StringCodec{}, "lpt¹", "lpt%C2%B9"},
		{StringCodec{}, "console", "console"},
		{StringCodec{Prefix: "co"}, "n", "co%6E"},
		{StringCodec{Prefix: "com"}, "1", "com%31"},
		{StringCodec{Prefix: "nul"}, ".x", "nul%2Ex"},
		{StringCodec{Prefix: "lpt"}, ".x", "lpt.x"},
		{StringCodec{Prefix: "s-"}, "con", "s-con"},
		{StringCodec{Prefix: "s-"}, ".", "s-%2E"},
	} {
		if got := c.codec.Format(c.id); got != c.name {
			t.Errorf("StringCodec{%q}.Format(%q) = %q, want %q", c.codec.Prefix, c.id, got, c.name)
		}
		if got, ok := c.codec.Parse(c.name); !ok || got != c.id {
			t.Errorf("StringCodec{%q}.Parse(%q) = %q, %v, want %q", c.codec.Prefix, c.name, got, ok, c.id)
		}
		if err := checkElement(c.name); err != nil {
			t.Errorf("StringCodec{%q}.Format(%q) = %q, refused by the layout: %v", c.codec.Prefix, c.id, c.name, err)
		}
	}
}

func TestStringCodecRoundTrip(t *testing.T) {
	c := StringCodec{}
	for _, s := range []string{"", "a", ".", "..", ".hidden", "a/b", "../../etc", "100%", "%", "sp ace", "ü", "\x00", "a.b-c_d",
		"A", "Con", "con", "CON", "nul.txt", "a.", "a..", "COM1", "com1", "lpt¹", "aux.tar.gz", "prn ", "a:b", "K", "\u212a"} {
		name := c.Format(s)
		if err := checkElement(name); err != nil {
			t.Fatalf("Format(%q) = %q, not a safe element: %v", s, name, err)
		}
		if got, ok := c.Parse(name); !ok || got != s {
			t.Fatalf("Parse(Format(%q)=%q) = %q, %v", s, name, got, ok)
		}
	}
	for _, name := range []string{"%2f", "%2", "%", "%%", "a%", "%ZZ",
		"A", "Abc", "con", "nul.txt", "a.", "com1", "%61", "%63on%2E"} {
		if name == "%" {
			continue // the empty string's name
		}
		if s, ok := c.Parse(name); ok {
			t.Fatalf("Parse(%q) = %q, true; want false (not canonical)", name, s)
		}
	}
}

// FuzzCodecs: Parse(Format(x)) == x, Format's names are safe elements (up
// to length), and whatever Parse accepts, Format reproduces exactly.
func FuzzCodecs(f *testing.F) {
	for _, s := range []string{"", "gen-1", "gen-010", "a/b", "..", "%2F", "gen--0", ".x", "\x00", "Con", "nul.txt", "a.", "lpt¹"} {
		f.Add(s, int64(len(s))-3)
	}
	ints := IntCodec[int64]{Prefix: "gen-"}
	strs := StringCodec{Prefix: "s-"}
	bare := StringCodec{}
	f.Fuzz(func(t *testing.T, s string, n int64) {
		if got, ok := ints.Parse(ints.Format(n)); !ok || got != n {
			t.Fatalf("int round trip %d: %d, %v", n, got, ok)
		}
		if id, ok := ints.Parse(s); ok && ints.Format(id) != s {
			t.Fatalf("IntCodec parsed %q to %d, which formats as %q", s, id, ints.Format(id))
		}
		for _, c := range []StringCodec{strs, bare} {
			name := c.Format(s)
			if got, ok := c.Parse(name); !ok || got != s {
				t.Fatalf("string round trip %q via %q: %q, %v", s, name, got, ok)
			}
			if err := checkElement(name); err != nil && !strings.Contains(err.Rule, "bytes long") {
				t.Fatalf("Format(%q) = %q: %v", s, name, err)
			}
			if id, ok := c.Parse(s); ok && c.Format(id) != s {
				t.Fatalf("StringCodec parsed %q to %q, which formats as %q", s, id, c.Format(id))
			}
			if flipped := flipCase(s); flipped != s && strings.EqualFold(name, c.Format(flipped)) {
				t.Fatalf("Format(%q) = %q and Format(%q) = %q differ only by case", s, name, flipped, c.Format(flipped))
			}
		}
	})
}

// flipCase swaps the case of every letter of s.
func flipCase(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsUpper(r) {
			return unicode.ToLower(r)
		}
		return unicode.ToUpper(r)
	}, s)
}

// idChars are the runes the property draws IDs from: letters of both cases
// (the Kelvin sign folds to k), the letters of device names, dots, spaces,
// digits and a superscript, and characters that must be escaped.
var idChars = []rune("aAcCoOnNuUlLpPtTxXkK\u212a.. 19¹%:/\\\x00\x1fé")

// TestStringCodecPortableProperty: for every string ID and prefix, Format's
// name passes the layout's name check (up to length), parses back to the
// ID, and no two IDs have names that differ only by case.
func TestStringCodecPortableProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := StringCodec{Prefix: rapid.SampledFrom([]string{"", "s-", "gen-", "co", "com", "lpt", "nul", "Au", "x."}).Draw(t, "prefix")}
		id := rapid.OneOf(rapid.StringOf(rapid.SampledFrom(idChars)), rapid.String()).Draw(t, "id")
		other := rapid.OneOf(
			rapid.Just(flipCase(id)),
			rapid.Just(strings.ToUpper(id)),
			rapid.StringOf(rapid.SampledFrom(idChars)),
		).Draw(t, "other")
		name := c.Format(id)
		if err := checkElement(name); err != nil && !strings.Contains(err.Rule, "bytes long") {
			t.Fatalf("Format(%q) = %q, refused by the layout: %v", id, name, err)
		}
		if got, ok := c.Parse(name); !ok || got != id {
			t.Fatalf("Parse(Format(%q) = %q) = %q, %v", id, name, got, ok)
		}
		if otherName := c.Format(other); strings.EqualFold(name, otherName) && other != id {
			t.Fatalf("Format(%q) = %q and Format(%q) = %q differ only by case", id, name, other, otherName)
		}
	})
}
