package names

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"pgregory.net/rapid"
)

// TestFoldKeyMatchesEqualFold: for UTF-8 names, FoldKey gives two names
// one key exactly when strings.EqualFold takes them for equal.
func TestFoldKeyMatchesEqualFold(t *testing.T) {
	chars := rapid.SampledFrom([]rune("aAkKsSßẞſ\u212aÅåǅǄǆΣσςİıi.é"))
	rapid.Check(t, func(t *rapid.T) {
		a := rapid.StringOf(chars).Draw(t, "a")
		b := rapid.OneOf(rapid.Just(flipCase(a)), rapid.StringOf(chars)).Draw(t, "b")
		if !utf8.ValidString(a) || !utf8.ValidString(b) {
			t.Skip("EqualFold reads invalid bytes as U+FFFD")
		}
		if same, fold := FoldKey(a) == FoldKey(b), strings.EqualFold(a, b); same != fold {
			t.Fatalf("FoldKey(%q) == FoldKey(%q) is %v; EqualFold is %v", a, b, same, fold)
		}
	})
}

func TestFoldKeyKeepsInvalidBytes(t *testing.T) {
	if FoldKey("\xff") == FoldKey("\xfe") {
		t.Fatal(`FoldKey folds "\xff" and "\xfe" together; they are distinct names`)
	}
	if got := FoldKey("plain-name.cue"); got != "plain-name.cue" {
		t.Fatalf("FoldKey changed a lower-case ASCII name: %q", got)
	}
}

func TestReservedDevice(t *testing.T) {
	for name, want := range map[string]string{
		"con": "CON", "CON": "CON", "Con.txt": "CON", "con .txt": "CON", "con  ": "CON", "nul.tar.gz": "NUL",
		"aux": "AUX", "prn": "PRN", "com0": "COM0", "COM9": "COM9", "lpt5.x": "LPT5", "com¹": "COM¹", "LPT³": "LPT³",
		"console": "", "com": "", "lpt": "", "com10": "", "co": "", "xcon": "", "com¹0": "", "lpt⁴": "", "nul-x": "", ".con": "",
	} {
		dev, ok := reservedDevice(name)
		if ok != (want != "") || dev != want {
			t.Errorf("reservedDevice(%q) = %q, %v, want %q", name, dev, ok, want)
		}
	}
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
