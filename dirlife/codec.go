package dirlife

import (
	"cmp"
	"strconv"
	"strings"
)

// A Codec turns IDs into directory names under a layout's root and back.
//
// Format must return a single safe path element that does not start with a
// dot (the layout reserves those), is at most 255 bytes and is portable
// (see [NameError] for the rules: no character Windows refuses, no control
// character, no trailing dot or space, no Windows device name); the layout
// refuses an ID whose name breaks these rules with a [NameError]. Parse
// must return false for every name that Format does not produce, and
// Parse(Format(id)) must return id. Format should also give distinct IDs
// names that differ by more than case, as [IntCodec] does: the layout
// cannot tell, and on a case-insensitive filesystem two such IDs share one
// directory.
type Codec[ID cmp.Ordered] interface {
	Format(id ID) string
	Parse(name string) (ID, bool)
}

// IntCodec names the directory of integer ID n (of any integer type)
// Prefix followed by n in canonical decimal: with Prefix "gen-", ID 10 is "gen-10". Only the
// canonical form parses, so "gen-010" and "gen-+10" are not IDs. Prefix
// must not start with a dot or contain a slash, and must make names the
// layout accepts: with Prefix "com" or "lpt", the IDs 0 to 9 are Windows
// device names, which the layout refuses.
type IntCodec[ID ~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr] struct {
	Prefix string
}

// Format returns Prefix followed by id in decimal.
func (c IntCodec[ID]) Format(id ID) string {
	if ID(0)-1 < 0 { // signed
		return c.Prefix + strconv.FormatInt(int64(id), 10)
	}
	return c.Prefix + strconv.FormatUint(uint64(id), 10)
}

// Parse returns the ID that Format turns into name, and whether there is
// one.
func (c IntCodec[ID]) Parse(name string) (ID, bool) {
	digits, ok := strings.CutPrefix(name, c.Prefix)
	if !ok || !canonicalDecimal(digits) {
		return 0, false
	}
	var id ID
	if ID(0)-1 < 0 {
		n, err := strconv.ParseInt(digits, 10, 64)
		if err != nil || int64(ID(n)) != n {
			return 0, false
		}
		id = ID(n)
	} else {
		n, err := strconv.ParseUint(digits, 10, 64)
		if err != nil || uint64(ID(n)) != n {
			return 0, false
		}
		id = ID(n)
	}
	return id, true
}

// canonicalDecimal reports whether s is an integer as strconv formats it:
// an optional minus, then digits without a leading zero, and not "-0".
func canonicalDecimal(s string) bool {
	if rest, neg := strings.CutPrefix(s, "-"); neg {
		if rest == "0" {
			return false
		}
		s = rest
	}
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
