package kernel

import (
	"strings"
	"testing"
	"testing/fstest"

	"cuelang.org/go/mod/modfile"
	"pgregory.net/rapid"
)

// readModuleText reads a module file holding text.
func readModuleText(text string) (moduleInfo, error) {
	return readModuleFile(fstest.MapFS{moduleFile: {Data: []byte(text)}}, moduleFile)
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
			t.Errorf("readModuleFile(%q) = %v", tt.text, err)
			continue
		}
		if m.plain() != tt.plain {
			t.Errorf("readModuleFile(%q).plain() = %v, want %v", tt.text, m.plain(), tt.plain)
		}
		checkPlainAccepted(t, tt.text, m)
	}
}

// TestPlainModuleFileAccepted checks, over generated module files, the
// promise the kernel relies on when it keeps a module file from the
// loader: the loader accepts every file the kernel calls plain, with the
// same module path and language version.
func TestPlainModuleFileAccepted(t *testing.T) {
	paths := []string{"example.com/shop@v0", "example.com/a/b@v2", "example.com/shop", "example.com/shop@v1.0.0",
		"Example.com/x@v0", "example.com/a..b@v0", "example.com/x@v01", "example.com@v0", "a@v0", "", "local"}
	versions := []string{"v0.14.0", "v0.9.0", "v0.9.0-alpha.1", "v0.8.0", "v0.8.0-alpha.0", "v0.17.0", "v0.17.1",
		"v0.18.0", "v1.0.0", "v0.7.0", "v0.1.0", "v0.14", "0.14.0", "v0.14.0+meta", ""}
	// Most draws are close to plain, so that each rule of plainness is
	// what decides many of them.
	quote := []func(string) string{
		func(s string) string { return `"` + s + `"` },
		func(s string) string { return `"` + s + `"` },
		func(s string) string { return `"` + s + `"` },
		func(s string) string { return `'` + s + `'` },
		func(s string) string { return `#"` + s + `"#` },
	}
	plain := 0
	rapid.Check(t, func(t *rapid.T) {
		var decls []string
		if rapid.IntRange(0, 7).Draw(t, "module") > 0 {
			q := rapid.SampledFrom(quote).Draw(t, "quoteModule")
			decls = append(decls, "module: "+q(rapid.SampledFrom(paths).Draw(t, "path")))
		}
		if rapid.IntRange(0, 7).Draw(t, "language") > 0 {
			q := rapid.SampledFrom(quote).Draw(t, "quoteVersion")
			v := q(rapid.SampledFrom(versions).Draw(t, "version"))
			decls = append(decls, rapid.SampledFrom([]string{
				"language: version: " + v,
				"language: {version: " + v + "}",
				"language: version: " + v,
				"language: {version: " + v + ", x: 1}",
				"language: version?: " + v,
			}).Draw(t, "languageForm"))
		}
		if rapid.IntRange(0, 3).Draw(t, "extras") == 0 {
			decls = append(decls, rapid.SliceOfN(rapid.SampledFrom([]string{
				`source: kind: "self"`, `source: kind: "svn"`, `description: "x"`, `custom: legacy: x: 1`,
				`module: "example.com/other@v0"`, `language: version: "v0.9.0"`, `x: 1`,
			}), 1, 2).Draw(t, "extra")...)
		}
		perm := rapid.Permutation(decls).Draw(t, "order")
		text := strings.Join(perm, "\n") + "\n"
		m, err := readModuleText(text)
		if err != nil {
			t.Fatalf("readModuleFile(%q) = %v", text, err)
		}
		checkPlainAccepted(t, text, m)
		if m.plain() {
			plain++
		}
	})
	if plain == 0 {
		t.Error("no generated module file was plain")
	}
}

// checkPlainAccepted fails t if m, read from text, is plain but the
// loader's validation of module files refuses text or reads it otherwise.
func checkPlainAccepted(t interface {
	Helper()
	Fatalf(string, ...any)
}, text string, m moduleInfo) {
	t.Helper()
	if !m.plain() {
		return
	}
	mf, err := modfile.ParseNonStrict([]byte(text), moduleFile)
	if err != nil {
		t.Fatalf("module file %q: plain, but the loader refuses it: %v", text, err)
	}
	if mf.QualifiedModule() != m.path || mf.Language.Version != m.language {
		t.Fatalf("module file %q: plain as %s at %s, but the loader reads %s at %s",
			text, m.path, m.language, mf.QualifiedModule(), mf.Language.Version)
	}
}
