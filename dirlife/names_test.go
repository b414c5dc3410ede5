package dirlife

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"leasekit.dev/dirlife/internal/names"
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

		// Portability: names Windows cannot hold or folds together.
		{"trailing dot", Files{"a.": nil}, "a.", names.RuleTrailing},
		{"trailing dot in a directory", Files{"d./f": nil}, "d./f", names.RuleTrailing},
		{"trailing space", Files{"a ": nil}, "a ", names.RuleTrailing},
		{"trailing space in a directory", Files{"x/d /f": nil}, "x/d /f", names.RuleTrailing},
		{"device", Files{"con": nil}, "con", names.RuleDevice},
		{"device upper case", Files{"PRN": nil}, "PRN", names.RuleDevice},
		{"device mixed case", Files{"aUx": nil}, "aUx", names.RuleDevice},
		{"device with extension", Files{"nul.txt": nil}, "nul.txt", names.RuleDevice},
		{"device with two extensions", Files{"d/Nul.tar.gz": nil}, "d/Nul.tar.gz", names.RuleDevice},
		{"device before spaces and extension", Files{"con .txt": nil}, "con .txt", names.RuleDevice},
		{"device as a directory", Files{"lpt1/f": nil}, "lpt1/f", names.RuleDevice},
		{"com0", Files{"COM0": nil}, "COM0", names.RuleDevice},
		{"com9", Files{"com9.log": nil}, "com9.log", names.RuleDevice},
		{"lpt superscript", Files{"lpt¹": nil}, "lpt¹", names.RuleDevice},
		{"com superscript", Files{"COM³.txt": nil}, "COM³.txt", names.RuleDevice},
		{"colon", Files{"a:b": nil}, "a:b", names.RuleWindows},
		{"less", Files{"a<b": nil}, "a<b", names.RuleWindows},
		{"greater", Files{"a>b": nil}, "a>b", names.RuleWindows},
		{"quote", Files{`a"b`: nil}, `a"b`, names.RuleWindows},
		{"pipe", Files{"d/a|b": nil}, "d/a|b", names.RuleWindows},
		{"question mark", Files{"a?": nil}, "a?", names.RuleWindows},
		{"asterisk", Files{"*": nil}, "*", names.RuleWindows},
		{"control", Files{"a\x01b": nil}, "a\x01b", names.RuleControl},
		{"tab", Files{"a\tb": nil}, "a\tb", names.RuleControl},
		{"unit separator", Files{"d\x1f/f": nil}, "d\x1f/f", names.RuleControl},
		{"newline", Files{"a\n": nil}, "a\n", names.RuleControl},
		{"case", Files{"README": nil, "readme": nil}, "readme", `"README" and "readme"`},
		{"case deep", Files{"d/File.cue": nil, "d/file.cue": nil}, "d/file.cue", `"d/File.cue" and "d/file.cue"`},
		{"case of directories", Files{"Pkg/a": nil, "pkg/b": nil}, "pkg/b", `"Pkg" (in "Pkg/a") and "pkg" (in "pkg/b")`},
		{"case of file and directory", Files{"A/b": nil, "a": nil}, "a", `"A" (in "A/b") and "a"`},
		{"case after clean", Files{"./X": nil, "x": nil}, "x", `"X" (in "./X") and "x"`},
		{"case by unicode folding", Files{"\u212a": nil, "k": nil}, "\u212a", names.RuleCase},
		{"case non-ascii", Files{"Ü": nil, "ü": nil}, "ü", names.RuleCase},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := genLayout(t)
			mustWrite(t, l, 1, Files{"keep": []byte("old")})
			before := rootEntries(t, l.Root)

			// DigestFiles refuses what Write refuses, with the same error.
			_, checked := l.DigestFiles(c.files)

			_, err := l.Write(1, c.files)
			if checked == nil || err == nil || checked.Error() != err.Error() {
				t.Fatalf("DigestFiles = %v, Write = %v: want the same refusal", checked, err)
			}
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
		"console":       []byte("7"), // not a device: longer than one
		"com10":         []byte("8"),
		"lpt/nul-x":     []byte("9"),
		"conx.txt":      []byte("10"),
		"a.b/c.d":       []byte("11"),
		"\xff":          []byte("12"), // not UTF-8: no case to fold
		"\xfe":          []byte("13"),
	}
	if _, err := l.DigestFiles(files); err != nil {
		t.Fatalf("DigestFiles of accepted names = %v", err)
	}
	mustWrite(t, l, 1, files)
	want := Files{"b": []byte("1"), "c": []byte("2"), "d/e": []byte("3"), ".hidden": []byte("4"), "x/y/z/w.cue": []byte("5"), "sp ace/ü.json": []byte("6"),
		"console": []byte("7"), "com10": []byte("8"), "lpt/nul-x": []byte("9"), "conx.txt": []byte("10"), "a.b/c.d": []byte("11"), "\xff": []byte("12"), "\xfe": []byte("13")}
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
		if _, err := l.DigestFiles(files); !errors.Is(err, ErrNoFiles) {
			t.Fatalf("DigestFiles(%v) = %v, want ErrNoFiles", files, err)
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
	for _, id := range []string{"", ".", "..", "a/b", ".hidden", strings.Repeat("x", 256),
		"con", "NUL.txt", "com1", "lpt²", "a.", "a ", "a:b", "a*", "a\x01", "a\\b"} {
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

// Dir on a layout with no Codec panics with a message naming the package
// and the rule, not with a nil dereference.
func TestDirWithoutCodecPanics(t *testing.T) {
	defer func() {
		msg := fmt.Sprint(recover())
		if !strings.HasPrefix(msg, "dirlife: ") || !strings.Contains(msg, "Codec") {
			t.Fatalf("Dir with no Codec: recovered %q, want a dirlife panic naming the Codec", msg)
		}
	}()
	Layout[int]{Root: t.TempDir()}.Dir(1)
}

// The errors of the package carry its prefix, also the one DigestFiles
// returns for an empty set.
func TestDigestFilesErrorPrefix(t *testing.T) {
	for _, files := range []Files{nil, {"/abs": nil}} {
		if _, err := (Layout[int]{}).DigestFiles(files); err == nil || !strings.HasPrefix(err.Error(), "dirlife: ") {
			t.Errorf("DigestFiles(%v) = %v, want an error beginning \"dirlife: \"", files, err)
		}
	}
}
