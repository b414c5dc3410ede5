package names

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The rules that keep a layout portable: every name it writes, an ID's
// directory or an element of a file's path, is one that Windows, macOS and
// Linux all hold as written. They are checked on every platform, so a
// layout written on Linux can be copied, archived or served to any of them.
const (
	RuleControl  = "contains a control character"
	RuleWindows  = "contains a character that Windows does not allow in a name"
	RuleTrailing = "ends with a dot or a space, which Windows drops"
	RuleDevice   = "is a reserved device name on Windows"
	RuleCase     = "differs only by case from another name, and the two collide on a case-insensitive filesystem"
)

// windowsForbidden are the printable characters Windows refuses in a name.
const windowsForbidden = `:<>"\|?*`

// checkPortable reports whether elem, one path element, breaks a
// portability rule. elem is not empty and holds no slash.
func checkPortable(elem string) *NameError {
	for i := 0; i < len(elem); i++ {
		if c := elem[i]; c < 0x20 {
			return &NameError{elem, fmt.Sprintf("%s (0x%02X)", RuleControl, c)}
		}
	}
	if i := strings.IndexAny(elem, windowsForbidden); i >= 0 {
		return &NameError{elem, fmt.Sprintf("%s (%q)", RuleWindows, elem[i])}
	}
	if last := elem[len(elem)-1]; last == '.' || last == ' ' {
		return &NameError{elem, RuleTrailing}
	}
	if dev, ok := reservedDevice(elem); ok {
		return &NameError{elem, fmt.Sprintf("%s (%s)", RuleDevice, dev)}
	}
	return nil
}

// reservedDevice reports whether Windows takes elem for a device: CON,
// PRN, AUX, NUL, COM0-COM9 or LPT0-LPT9, in any case, alone or before an
// extension ("nul.txt"), with or without spaces before the extension, and
// COM and LPT also with a superscript digit ¹, ² or ³. It returns the
// device's name.
func reservedDevice(elem string) (string, bool) {
	stem, _, _ := strings.Cut(elem, ".")
	stem = strings.TrimRight(stem, " ")
	if len(stem) < 3 {
		return "", false
	}
	head, rest := stem[:3], stem[3:]
	for _, dev := range [...]string{"CON", "PRN", "AUX", "NUL"} {
		if strings.EqualFold(head, dev) && rest == "" {
			return dev, true
		}
	}
	for _, dev := range [...]string{"COM", "LPT"} {
		if !strings.EqualFold(head, dev) {
			continue
		}
		switch {
		case len(rest) == 1 && '0' <= rest[0] && rest[0] <= '9':
			return dev + rest, true
		case rest == "¹" || rest == "²" || rest == "³":
			return dev + rest, true
		}
	}
	return "", false
}

// FoldKey returns a key under which two names are equal exactly when a
// case-insensitive filesystem takes them for one: each letter is replaced
// by one representative of its Unicode simple case folding (lower case for
// ASCII), as [strings.EqualFold] compares them. Bytes that are not UTF-8
// are kept as they are. A name with nothing to fold is returned as is,
// without allocating.
func FoldKey(s string) string {
	i := 0
	for ; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || 'A' <= c && c <= 'Z' {
			break
		}
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteByte(s[i])
		} else {
			b.WriteRune(foldRune(r))
		}
		i += n
	}
	return b.String()
}

// foldRune returns the representative of r's case-folding orbit: its ASCII
// member in lower case if it has one, else its smallest member.
func foldRune(r rune) rune {
	if r < utf8.RuneSelf {
		return unicode.ToLower(r)
	}
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < utf8.RuneSelf {
			return unicode.ToLower(f)
		}
		least = min(least, f)
	}
	return least
}
