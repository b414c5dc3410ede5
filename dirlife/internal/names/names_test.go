package names

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzPlanFiles checks that every name the validator accepts is local,
// clean, unique and free of file-versus-directory conflicts, and that it
// never panics.
func FuzzPlanFiles(f *testing.F) {
	for _, seed := range [][2]string{
		{"a", "b"}, {"a/b", "a//b"}, {"a", "a/b"}, {"../x", "y"}, {"a/../../x", ""},
		{"/abs", "rel"}, {"a\x00", "b"}, {"./a", "a"}, {"a/./b/../c", "a/c"}, {`a\b`, "c"},
		{"A", "a"}, {"D/x", "d/y"}, {"con.txt", "x"}, {"a.", "b "}, {"a:b", "c"}, {"\u212a", "k"}, {"lpt¹/x", "y"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		given := []string{a, b}
		if a == b {
			given = given[:1] // a set of names, as the keys of a map
		}
		p, err := PlanNames(given)
		if err != nil {
			var ne *NameError
			if !errors.As(err, &ne) || (ne.Name != a && ne.Name != b) {
				t.Fatalf("PlanNames error %v does not name %q or %q", err, a, b)
			}
			return
		}
		seen := map[string]bool{}
		for _, n := range p.Names {
			if n == "" || n == "." || strings.HasPrefix(n, "/") || n == ".." || strings.HasPrefix(n, "../") ||
				strings.Contains(n, "/../") || strings.HasSuffix(n, "/..") || strings.Contains(n, "//") ||
				strings.ContainsRune(n, 0) || strings.ContainsRune(n, '\\') {
				t.Fatalf("accepted unsafe name %q (from %q, %q)", n, a, b)
			}
			if seen[n] {
				t.Fatalf("accepted duplicate %q", n)
			}
			seen[n] = true
		}
		for _, n := range p.Names {
			for _, m := range p.Names {
				if strings.HasPrefix(m, n+"/") {
					t.Fatalf("accepted %q as a file and as the directory of %q", n, m)
				}
			}
		}
		// Portable: every element passes the rules, and no two paths,
		// files or directories, differ only by case.
		var all []string
		for _, n := range p.Names {
			for e := range strings.SplitSeq(n, "/") {
				if err := checkPortable(e); err != nil {
					t.Fatalf("accepted %q with an unportable element: %v", n, err)
				}
			}
			all = append(all, n)
		}
		all = append(all, p.Dirs...)
		for i, n := range all {
			for _, m := range all[i+1:] {
				if n != m && utf8.ValidString(n) && utf8.ValidString(m) && strings.EqualFold(n, m) {
					t.Fatalf("accepted %q and %q, which differ only by case", n, m)
				}
			}
		}
	})
}
