package dirlife

import (
	"errors"
	"strings"
	"testing"
)

// TestHostileNames feeds Write names that must be refused before anything
// is written: the cases of Kubernetes' AtomicWriter validatePath and more.
func TestHostileNames(t *testing.T) {
	long := strings.Repeat("x", 256)
	cases := []struct {
		name  string
		files Files
		bad   string // the name the error must carry
		rule  string // a fragment of the rule
	}{
		{"empty", Files{"": nil}, "", "is empty"},
		{"dot", Files{".": nil}, ".", "directory itself"},
		{"dot slash", Files{"./": nil}, "./", "directory itself"},
		{"absolute", Files{"/etc/passwd": nil}, "/etc/passwd", "absolute"},
		{"dotdot", Files{"..": nil}, "..", "escapes"},
		{"dotdot prefix", Files{"../x": nil}, "../x", "escapes"},
		{"dotdot after clean", Files{"a/../../x": nil}, "a/../../x", "escapes"},
		{"dotdot deep", Files{"a/b/../../../x": nil}, "a/b/../../../x", "escapes"},
		{"nul", Files{"a\x00b": nil}, "a\x00b", "NUL"},
		{"backslash", Files{`a\..\..\x`: nil}, `a\..\..\x`, "backslash"},
		{"long element", Files{"a/" + long: nil}, "a/" + long, "256-byte element"},
		{"long path", Files{strings.Repeat("a/", 2100) + "x": nil}, strings.Repeat("a/", 2100) + "x", "limit of a path"},
		{"duplicate after clean", Files{"a/b": nil, "a//b": nil}, "a/b", "same file as"},
		{"duplicate dot", Files{"a/./b": nil, "a/b": nil}, "a/b", "same file as"},
		{"file and directory", Files{"a": nil, "a/b": nil}, "a", "also the directory"},
		{"file and deep directory", Files{"a/b": nil, "a/b/c/d": nil}, "a/b", "also the directory"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := genLayout(t)
			mustWrite(t, l, 1, Files{"keep": []byte("old")})
			before := rootEntries(t, l.Root)

			_, err := l.Write(1, c.files)
			var ne *NameError
			if !errors.As(err, &ne) || !errors.Is(err, ErrInvalidName) {
				t.Fatalf("Write = %v, want a *NameError", err)
			}
			if ne.Name != c.bad || !strings.Contains(ne.Rule, c.rule) {
				t.Fatalf("NameError{%q, %q}, want name %q and a rule with %q", ne.Name, ne.Rule, c.bad, c.rule)
			}
			if got := readTree(t, l.Dir(1)); !sameFiles(got, Files{"keep": []byte("old")}) {
				t.Fatalf("a refused Write changed the directory: %v", got)
			}
			if after := rootEntries(t, l.Root); strings.Join(after, ",") != strings.Join(before, ",") {
				t.Fatalf("a refused Write changed the root: %v, was %v", after, before)
			}
		})
	}
}

func TestAcceptedNames(t *testing.T) {
	l := genLayout(t)
	files := Files{
		"a/../b":        []byte("1"), // cleans to b
		"./c":           []byte("2"),
		"d//e":          []byte("3"),
		".hidden":       []byte("4"),
		"x/y/z/w.cue":   []byte("5"),
		"sp ace/ü.json": []byte("6"),
	}
	mustWrite(t, l, 1, files)
	want := Files{"b": []byte("1"), "c": []byte("2"), "d/e": []byte("3"), ".hidden": []byte("4"), "x/y/z/w.cue": []byte("5"), "sp ace/ü.json": []byte("6")}
	if got := readTree(t, l.Dir(1)); !sameFiles(got, want) {
		t.Fatalf("tree = %v, want %v", got, want)
	}
}

func TestEmptyFilesRefused(t *testing.T) {
	l := genLayout(t)
	for _, files := range []Files{nil, {}} {
		if _, err := l.Write(1, files); !errors.Is(err, ErrNoFiles) {
			t.Fatalf("Write(%v) = %v, want ErrNoFiles", files, err)
		}
	}
	if ids, _ := l.IDs(); ids != nil {
		t.Fatalf("IDs() = %v after refused writes", ids)
	}
}

// TestBadCodecNameRefused: an ID whose directory name is not one safe
// element is refused by Write and skipped by Prune's keep set.
func TestBadCodecNameRefused(t *testing.T) {
	root := t.TempDir() + "/root"
	for _, id := range []string{"", ".", "..", "a/b", ".hidden", strings.Repeat("x", 256)} {
		l := Layout[string]{Root: root, Codec: rawCodec{}}
		_, err := l.Write(id, Files{"f": nil})
		var ne *NameError
		if !errors.As(err, &ne) || ne.Name != id {
			t.Fatalf("Write(%q) = %v, want a NameError naming it", id, err)
		}
	}
}

// rawCodec uses the ID as its name, unescaped: a careless codec.
type rawCodec struct{}

func (rawCodec) Format(id string) string          { return id }
func (rawCodec) Parse(name string) (string, bool) { return name, true }

// FuzzPlanFiles checks that every name the validator accepts is local,
// clean, unique and free of file-versus-directory conflicts, and that it
// never panics.
func FuzzPlanFiles(f *testing.F) {
	for _, seed := range [][2]string{
		{"a", "b"}, {"a/b", "a//b"}, {"a", "a/b"}, {"../x", "y"}, {"a/../../x", ""},
		{"/abs", "rel"}, {"a\x00", "b"}, {"./a", "a"}, {"a/./b/../c", "a/c"}, {`a\b`, "c"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		p, err := planFiles(Files{a: nil, b: nil})
		if err != nil {
			var ne *NameError
			if !errors.As(err, &ne) || (ne.Name != a && ne.Name != b) {
				t.Fatalf("planFiles error %v does not name %q or %q", err, a, b)
			}
			return
		}
		seen := map[string]bool{}
		for _, n := range p.names {
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
		for _, n := range p.names {
			for _, m := range p.names {
				if strings.HasPrefix(m, n+"/") {
					t.Fatalf("accepted %q as a file and as the directory of %q", n, m)
				}
			}
		}
	})
}
