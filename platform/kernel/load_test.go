package kernel

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"cuelang.org/go/cue"
	"cuelang.org/go/cue/cuecontext"
	cueerrors "cuelang.org/go/cue/errors"
	"cuelang.org/go/cue/load"

	"leasekit.dev/internal/testkit/dirtree"
)

// TestLoadDirMatchesLoader: for each of these modules, whether loadDir
// loads it with its module file kept from a quick load or in full, the
// evaluated value, or the error's details, equals what cue/load gives when
// it loads the directory itself, and so do the module and import paths
// of a module that loads, and a load that parses headers only reads the
// files a full load reads: it has the same digest. It compares these
// modules only: files,
// packages, build attributes, imports and language versions; the
// refusals the kernel adds are tested where they are made.
func TestLoadDirMatchesLoader(t *testing.T) {
	const (
		v14 = "module: \"example.com/m@v0\"\nlanguage: version: \"v0.14.0\"\n"
		v15 = "module: \"example.com/m@v0\"\nlanguage: version: \"v0.15.0\"\n"
	)
	// Two struct values compare only from language version v0.15.0 on.
	structCmp := "package m\n\nx: {a: 1} == {a: 1}\n"
	for _, tt := range []struct {
		name  string
		files map[string]string
	}{
		{"one file", map[string]string{"m.cue": "package m\n\na: 1\nb: a + 1\n"}},
		{"two files", map[string]string{"m.cue": "package m\n\na: 1\n", "n.cue": "package m\n\nb: a + 1\n"}},
		{"ignored files", map[string]string{"m.cue": "package m\n\na: 1\n", "_x.cue": "package m\n\nb: 2\n",
			".y.cue": "package m\n\nc: 3\n", "t_tool.cue": "package m\n\nd: 4\n", "u_test.cue": "package m\n\ne: 5\n"}},
		{"build attribute", map[string]string{"m.cue": "package m\n\na: 1\n", "tagged.cue": "@if(debug)\n\npackage m\n\nb: 2\n"}},
		{"two packages", map[string]string{"m.cue": "package m\n\na: 1\n", "n.cue": "package n\n\nb: 2\n"}},
		{"data files", map[string]string{"m.cue": "package m\n\na: 1\n", "d.json": "{\"b\": 2}", "t.txt": "x",
			"y.yaml": "c: 3\n", "README.md": "# m\n", "sub/s.cue": "package sub\n\nb: 2\n"}},
		{"no package clause", map[string]string{"m.cue": "a: 1\n"}},
		{"no files", map[string]string{}},
		{"syntax error", map[string]string{"m.cue": "package m\n\na: {\n"}},
		{"conflict", map[string]string{"m.cue": "package m\n\na: 1\na: 2\n"}},
		{"standard import", map[string]string{"m.cue": "package m\n\nimport \"strings\"\n\na: strings.ToUpper(\"x\")\n"}},
		{"module import", map[string]string{"m.cue": "package m\n\nimport \"example.com/m/sub\"\n\na: sub.b\n",
			"sub/s.cue": "package sub\n\nb: 2\n"}},
		{"missing import", map[string]string{"m.cue": "package m\n\nimport \"example.com/m/none\"\n\na: none.b\n"}},
		{"language v0.14.0", map[string]string{"m.cue": structCmp}},
		{"language v0.15.0", map[string]string{"cue.mod/module.cue": v15, "m.cue": structCmp}},
		{"module file not plain", map[string]string{"cue.mod/module.cue": v14 + "source: kind: \"self\"\n", "m.cue": "package m\n\na: 1\n"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := map[string]string{"cue.mod/module.cue": v14}
			for name, data := range tt.files {
				files[name] = data
			}
			writeFiles(t, dir, files)
			m, err := loadDir(context.Background(), Limits{}.mustResolve(), dir)
			if err == nil {
				h, herr := loadDirMode(context.Background(), Limits{}.mustResolve(), dir, parseHeaders)
				if herr != nil || h.digest != m.digest || h.mode != parseHeaders {
					t.Errorf("a load of headers only = digest %s, %v; a full load's digest %s", h.digest, herr, m.digest)
				}
			}
			inst := m.inst
			var got cue.Value
			if err == nil {
				got = cuecontext.New().BuildInstance(inst)
				err = got.Err()
			}
			// Where cue/load names the directory it loads ".", the kernel,
			// naming its files for positions, names it in full.
			gotText := strings.ReplaceAll(describe(got, err), strconv.Quote(dir), `"."`)

			insts := load.Instances([]string{"."}, &load.Config{Dir: dir, Env: []string{"CUE_REGISTRY=none"}})
			var want cue.Value
			err = insts[0].Err
			if err == nil {
				want = cuecontext.New().BuildInstance(insts[0])
				err = want.Err()
			}
			if wantText := describe(want, err); gotText != wantText {
				t.Errorf("loadBuild:\n%s\ncue/load:\n%s", gotText, wantText)
			}
			if err == nil && (inst.Module != insts[0].Module || inst.ImportPath != insts[0].ImportPath) {
				t.Errorf("loadBuild: module %q, import path %q; cue/load: module %q, import path %q",
					inst.Module, inst.ImportPath, insts[0].Module, insts[0].ImportPath)
			}
		})
	}
}

// describe returns v, evaluated, or the details of err.
func describe(v cue.Value, err error) string {
	if err != nil {
		return "error: " + cueerrors.Details(err, nil)
	}
	return fmt.Sprintf("%v", v.Eval())
}

// writeFiles writes files, slash-separated paths to contents, under dir.
// fataler is what writeFiles needs of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

func writeFiles(t fataler, dir string, files map[string]string) {
	t.Helper()
	if err := dirtree.Write(dir, files); err != nil {
		t.Fatal(err)
	}
}
