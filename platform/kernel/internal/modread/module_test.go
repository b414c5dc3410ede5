package modread

import (
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/parser"
	"cuelang.org/go/mod/modfile"
	"pgregory.net/rapid"
)

// readModuleText reads what the kernel reads of a module file holding
// text before it validates it: its module path and plain language.
func readModuleText(text string) (ModuleInfo, error) {
	f, err := parser.ParseFile(ModuleFile, text)
	if err != nil {
		return ModuleInfo{}, err
	}
	path, _ := moduleField(f)
	return ModuleInfo{Path: path, Language: plainLanguage(f)}, nil
}

func TestPlainModuleFile(t *testing.T) {
	for _, tt := range []struct {
		text  string
		plain bool
	}{
		{"module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n", true},
		{"language: {\n\tversion: \"v0.9.0\"\n}\nmodule: \"example.com/a/b@v2\"\n", true},
		{`module: "example.com/shop@v0", language: version: "v0.14.0"`, true},

		{`module: "example.com/shop@v0"`, false},                                                             // no language version
		{`language: version: "v0.14.0"`, false},                                                              // no module
		{"module: \"example.com/shop\"\nlanguage: version: \"v0.14.0\"\n", false},                            // no major version
		{"module: \"example.com/shop@v1.2.0\"\nlanguage: version: \"v0.14.0\"\n", false},                     // not major only
		{"module: \"Example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n", false},                         // upper case
		{"module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14\"\n", false},                           // not canonical
		{"module: \"example.com/shop@v0\"\nlanguage: version: \"v99.0.0\"\n", false},                         // too new
		{"module: \"example.com/shop@v0\"\nlanguage: version: \"v0.1.0\"\n", false},                          // too old
		{"module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\nsource: kind: \"self\"\n", false}, // another field
		{"module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\", language: version: \"v0.14.0\"\n", false},
		{"module: \"\"\nlanguage: version: \"v0.14.0\"\nmodule: \"example.com/other@v0\"\n", false}, // set twice, first to ""
		{"module?: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n", false},
		{"module: \"example.com/shop@v0\" @attr()\nlanguage: version: \"v0.14.0\"\n", false},
		{"module: 'example.com/shop@v0'\nlanguage: version: \"v0.14.0\"\n", false},     // bytes
		{"module: #\"example.com/shop@v0\"#\nlanguage: version: \"v0.14.0\"\n", false}, // raw string
		{"module: \"example.com/\\(x)@v0\"\nx: \"shop\"\nlanguage: version: \"v0.14.0\"\n", false},
		{"module: \"example.com/shop@v0\"\nlanguage: {version: \"v0.14.0\", extra: 1}\n", false},
		{"let v = \"v0.14.0\"\nmodule: \"example.com/shop@v0\"\nlanguage: version: v\n", false},
	} {
		m, err := readModuleText(tt.text)
		if err != nil {
			t.Errorf("ReadModuleFile(%q) = %v", tt.text, err)
			continue
		}
		if m.Plain() != tt.plain {
			t.Errorf("ReadModuleFile(%q).plain() = %v, want %v", tt.text, m.Plain(), tt.plain)
		}
		checkPlainAccepted(t, tt.text, m)
	}
}

// TestPlainModuleFileAccepted checks, over generated module files, the
// promise the kernel relies on when it keeps a module file from the
// loader: the loader accepts every file the kernel calls plain, with the
// same module path and language version.
func TestPlainModuleFileAccepted(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// Each part of the file is drawn good or, one time in six, bad: a
		// file made of good parts only must be plain, and every plain file
		// must be accepted by the loader.
		allGood := true
		pick := func(label string, good, bad []string) string {
			if rapid.IntRange(0, 5).Draw(t, label+"Bad") == 0 {
				allGood = false
				return rapid.SampledFrom(bad).Draw(t, label)
			}
			return rapid.SampledFrom(good).Draw(t, label)
		}
		quote := func(label, s string) string {
			return pick(label, []string{`"` + s + `"`}, []string{`'` + s + `'`, `#"` + s + `"#`, `"""` + "\n" + s + "\n" + `"""`})
		}
		var decls []string
		path := pick("path", []string{"example.com/shop@v0", "example.com/a/b@v2", "x.y/z-z@v1"},
			[]string{"example.com/shop", "example.com/shop@v1.0.0", "Example.com/x@v0", "example.com/a..b@v0",
				"example.com/x@v01", "example.com@v0", "a@v0", "", "local"})
		if pick("module", []string{"yes"}, []string{"no"}) == "yes" {
			decls = append(decls, "module: "+quote("moduleQuote", path))
		}
		version := pick("version", []string{"v0.14.0", "v0.9.0", "v0.9.0-alpha.1", "v0.8.0", "v0.8.0-alpha.0", cue.LanguageVersion()},
			[]string{"v0.99.0", "v1.0.0", "v0.7.0", "v0.1.0", "v0.14", "0.14.0", "v0.14.0+meta", ""})
		if pick("language", []string{"yes"}, []string{"no"}) == "yes" {
			v := quote("versionQuote", version)
			decls = append(decls, pick("languageForm",
				[]string{"language: version: " + v, "language: {version: " + v + "}"},
				[]string{"language: {version: " + v + ", x: 1}", "language: version?: " + v, "language!: version: " + v}))
		}
		decls = append(decls, pick("extra", []string{""}, []string{`source: kind: "self"`, `source: kind: "svn"`,
			`description: "x"`, `custom: legacy: x: 1`, `module: "example.com/other@v0"`, `language: version: "v0.9.0"`, `x: 1`}))
		text := strings.Join(rapid.Permutation(decls).Draw(t, "order"), "\n") + "\n"
		m, err := readModuleText(text)
		if err != nil {
			t.Fatalf("ReadModuleFile(%q) = %v", text, err)
		}
		if allGood && !m.Plain() {
			t.Fatalf("module file %q: not plain", text)
		}
		checkPlainAccepted(t, text, m)
	})
}

// checkPlainAccepted fails t if m, read from text, is plain but the
// loader's validation of module files refuses text or reads it otherwise.
func checkPlainAccepted(t interface {
	Helper()
	Fatalf(string, ...any)
}, text string, m ModuleInfo) {
	t.Helper()
	if !m.Plain() {
		return
	}
	mf, err := modfile.ParseNonStrict([]byte(text), ModuleFile)
	if err != nil {
		t.Fatalf("module file %q: plain, but the loader refuses it: %v", text, err)
	}
	if mf.QualifiedModule() != m.Path || mf.Language.Version != m.Language {
		t.Fatalf("module file %q: plain as %s at %s, but the loader reads %s at %s",
			text, m.Path, m.Language, mf.QualifiedModule(), mf.Language.Version)
	}
}
