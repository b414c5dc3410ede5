package dirlife

import (
	"cmp"
	"strconv"
	"strings"
)

// A Codec turns IDs into directory names under a layout's root and back.
//
// Format must return a single safe path element that does not start with a
// dot (the layout reserves those) and is at most 255 bytes; the layout
// refuses an ID whose name breaks these rules with a [NameError]. Parse
// must return false for every name that Format does not produce, and
// Parse(Format(id)) must return id.
type Codec[ID cmp.Ordered] interface {
	Format(id ID) string
	Parse(name string) (ID, bool)
}

// Integer is the set of integer types an [IntCodec] encodes.
type Integer interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 |
		~uint | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~uintptr
}

// IntCodec names the directory of integer ID n Prefix followed by n in
// canonical decimal: with Prefix "gen-", ID 10 is "gen-10". Only the
// canonical form parses, so "gen-010" and "gen-+10" are not IDs. Prefix
// must not start with a dot or contain a slash.
type IntCodec[ID Integer] struct {
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

// StringCodec names the directory of string ID s Prefix followed by s with
// every byte outside [A-Za-z0-9_.-] written as %XX (upper-case hex), and a
// leading dot escaped too, so that any string, including an empty one or one
// holding slashes, round-trips through one safe path element. The empty
// string is written as Prefix followed by "%". An ID whose escaped name
// exceeds 255 bytes is refused by the layout.
type StringCodec struct {
	Prefix string
}

const upperHex = "0123456789ABCDEF"

func plainByte(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' ||
		b == '_' || b == '-' || b == '.'
}

// Format returns Prefix followed by the escaped form of id.
func (c StringCodec) Format(id string) string {
	if id == "" {
		return c.Prefix + "%"
	}
	var b strings.Builder
	b.Grow(len(c.Prefix) + len(id))
	b.WriteString(c.Prefix)
	for i := 0; i < len(id); i++ {
		ch := id[i]
		if plainByte(ch) && !(ch == '.' && i == 0 && c.Prefix == "") {
			b.WriteByte(ch)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(upperHex[ch>>4])
		b.WriteByte(upperHex[ch&0xf])
	}
	return b.String()
}

// Parse returns the string that Format turns into name, and whether there
// is one. Only the canonical escaping parses.
func (c StringCodec) Parse(name string) (string, bool) {
	rest, ok := strings.CutPrefix(name, c.Prefix)
	if !ok || rest == "" {
		return "", false
	}
	if rest == "%" {
		return "", true
	}
	var b strings.Builder
	b.Grow(len(rest))
	for i := 0; i < len(rest); i++ {
		if rest[i] != '%' {
			b.WriteByte(rest[i])
			continue
		}
		if i+2 >= len(rest) {
			return "", false
		}
		hi, lo := strings.IndexByte(upperHex, rest[i+1]), strings.IndexByte(upperHex, rest[i+2])
		if hi < 0 || lo < 0 {
			return "", false
		}
		b.WriteByte(byte(hi<<4 | lo))
		i += 2
	}
	id := b.String()
	if c.Format(id) != name { // a byte escaped that needed no escaping, or the reverse
		return "", false
	}
	return id, true
}
