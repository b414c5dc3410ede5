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
// names that differ by more than case, as [StringCodec] and [IntCodec] do:
// the layout cannot tell, and on a case-insensitive filesystem two such IDs
// share one directory.
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
// must not start with a dot or contain a slash, and must make names the
// layout accepts: with Prefix "com" or "lpt", the IDs 0 to 9 are Windows
// device names, which the layout refuses.
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

// StringCodec names the directory of string ID s Prefix followed by s
// escaped, so that any string, including an empty one or one holding
// slashes, round-trips through one safe, portable path element:
//
//   - every byte outside [a-z0-9_.-] is written as %XX (upper-case hex),
//     upper-case letters included, so that no two IDs have names that
//     differ only by case and collide on a case-insensitive filesystem
//     (macOS and Windows by default): "A" is "%41", "a" is "a";
//   - a leading dot (with an empty Prefix) and a trailing dot are escaped,
//     so that the name is not hidden or reserved by the layout and Windows
//     drops nothing from it;
//   - when the name would be a device name that Windows reserves ("con",
//     "nul.txt", "com1"), the first byte of s is escaped ("%63on").
//
// The empty string is written as Prefix followed by "%". Only this
// canonical form parses. An ID whose escaped name exceeds 255 bytes is
// refused by the layout, and so is every ID when Prefix itself breaks the
// layout's name rules (a Prefix holding a dot after a reserved device name,
// such as "nul.", or a character Windows refuses).
type StringCodec struct {
	Prefix string
}

const upperHex = "0123456789ABCDEF"

// plainByte reports whether b stands for itself in a StringCodec name.
func plainByte(b byte) bool {
	return 'a' <= b && b <= 'z' || '0' <= b && b <= '9' || b == '_' || b == '-' || b == '.'
}

// Format returns Prefix followed by the escaped form of id.
func (c StringCodec) Format(id string) string {
	if id == "" {
		return c.Prefix + "%"
	}
	name := c.format(id, false)
	if _, reserved := reservedDevice(name); reserved {
		name = c.format(id, true)
	}
	return name
}

// format escapes id after Prefix; escapeFirst escapes its first byte
// whatever it is.
func (c StringCodec) format(id string, escapeFirst bool) string {
	var b strings.Builder
	b.Grow(len(c.Prefix) + len(id))
	b.WriteString(c.Prefix)
	for i := 0; i < len(id); i++ {
		ch := id[i]
		plain := plainByte(ch) &&
			!(i == 0 && (escapeFirst || ch == '.' && c.Prefix == "")) &&
			!(ch == '.' && i == len(id)-1)
		if plain {
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
