package names

import (
	"strings"
	"testing"
)

// TestParseHeld refuses the names that do not record an ID: the plain
// garbage names, and hand-made names of the wrong shape.
func TestParseHeld(t *testing.T) {
	tag, _, ok := ParseHeld(HeldName("gen-7"))
	if !ok || tag != "gen-7" {
		t.Fatalf("ParseHeld(HeldName(gen-7)) = %q, %v", tag, ok)
	}
	for _, name := range []string{
		TempName(AsidePrefix), TempName(".stage-"), ".aside-", ".aside-1", "gen-7",
		AsidePrefix + strings.Repeat("0", 24) + "-", // no tag
		AsidePrefix + strings.Repeat("0", 24) + "+gen-7",
		AsidePrefix + strings.Repeat("A", 24) + "-gen-7", // upper case
		AsidePrefix + strings.Repeat("0", 23) + "-gen-7",
	} {
		if tag, _, ok := ParseHeld(name); ok {
			t.Errorf("ParseHeld(%q) = %q, want no ID", name, tag)
		}
	}
	a, b := HeldName("x"), HeldName("x")
	_, sa, _ := ParseHeld(a)
	_, sb, _ := ParseHeld(b)
	if sa[:heldStamp] >= sb[:heldStamp] {
		t.Fatalf("stamps %s then %s: not increasing", sa, sb)
	}
}
