package kernel

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"leasekit.dev/platform/kernel/internal/modread"
)

// TestPlainReadRendersAsTheLoadersRead: a render of an instance read
// plainly (every file, no parse) is the render of the instance read as
// the loader reads it, output and error text alike, for trees the plain
// read takes and those it leaves to the loader: good and broken module
// files, packages and syntax, subpackages imported, data files, files
// past the size and depth limits, vendored packages, empty directories
// (cue.mod/pkg, usr and gen among them), links and too many files.
func TestPlainReadRendersAsTheLoadersRead(t *testing.T) {
	p := labeledPlatform(t)
	ctx := context.Background()
	const module = "module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"
	plain := 0
	rapid.Check(t, func(t *rapid.T) {
		k := &Kernel{Limits: Limits{MaxFileSize: 2048, MaxFiles: 8, MaxDepth: 12}}
		limits, _ := k.limits()
		body, _ := drawInstance(t)
		files := map[string]string{}
		switch rapid.IntRange(0, 5).Draw(t, "modread.ModuleFile") {
		case 0:
		case 1:
			files[modread.ModuleFile] = "module: 1\n"
		case 2:
			files[modread.ModuleFile] = "module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\ndeps: \"x.com@v0\": v: \"v0.1.0\"\n"
		default:
			files[modread.ModuleFile] = module
		}
		files["shop.cue"] = body
		for i := range rapid.IntRange(0, 6).Draw(t, "extras") {
			name, data := "", ""
			switch rapid.IntRange(0, 11).Draw(t, "extra") {
			case 0:
				name, data = "more.cue", "package shop\nlabels: extra: \"x\"\n"
			case 1:
				name, data = "other.cue", "package other\nx: 1\n"
			case 2:
				name, data = "broken.cue", "package shop\ncomponents: {\n"
			case 3:
				name, data = "_skipped.cue", "package shop\nname: 1\n"
			case 4:
				name, data = ".hidden.cue", "package shop\nname: 2\n"
			case 5:
				name, data = "data.json", `{"labels": {"fromJSON": "y"}}`
			case 6:
				name, data = "README.md", strings.Repeat("r", rapid.IntRange(0, 4096).Draw(t, "readmeSize"))
			case 7:
				name, data = "big.cue", "package shop\n// "+strings.Repeat("x", 3000)+"\n"
			case 8:
				name, data = "deep.cue", "package shop\n_deep: "+strings.Repeat("{a: ", 20)+strings.Repeat("}", 20)+"\n"
			case 9:
				name, data = "cue.mod/pkg/x.com/y.cue", "package y\n"
			case 10:
				name, data = "sub/helper.cue", "package sub\nTier: \"gold\"\n"
				files["imports.cue"] = "package shop\nimport \"example.com/shop/sub\"\nlabels: tier: sub.Tier\n"
			case 11:
				name, data = fmt.Sprintf("notes/n%d.txt", i), "note"
			}
			files[name] = data
		}
		dir, err := os.MkdirTemp("", "plainread-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(dir)
		writeFiles(t, dir, files)
		// Empty directories, which the plain read keeps no trace of: in
		// cue.mod, where a non-empty one vendors packages, and elsewhere.
		for range rapid.IntRange(0, 3).Draw(t, "emptyDirs") {
			empty := rapid.SampledFrom([]string{
				"cue.mod/pkg", "cue.mod/usr", "cue.mod/gen", "cue.mod/pkg/x.com/empty",
				"cue.mod/gen/k8s.io/api", "cue.mod/other", "empty", "sub/deeper/empty",
			}).Draw(t, "emptyDir")
			if err := os.MkdirAll(filepath.Join(dir, filepath.FromSlash(empty)), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if rapid.IntRange(0, 5).Draw(t, "link") == 0 {
			if err := os.Symlink("shop.cue", filepath.Join(dir, "link.cue")); err != nil {
				t.Fatal(err)
			}
		}
		mem := map[string][]byte{}
		for name, data := range files {
			mem[name] = []byte(data)
		}
		for _, in := range []Instance{{Dir: dir}, {Files: mem}} {
			if in.Dir != "" {
				src, closeSrc, err := modread.OpenDir(dir)
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := modread.ReadPlain(ctx, limits.read(), src); ok {
					plain++
				}
				closeSrc()
			}
			want, werr := k.render(ctx, RenderInput{Platform: p, Instance: in}, paths{loaderReads: true})
			got, gerr := k.Render(ctx, RenderInput{Platform: p, Instance: in})
			if fmt.Sprint(gerr) != fmt.Sprint(werr) || reflect.TypeOf(gerr) != reflect.TypeOf(werr) {
				t.Fatalf("Dir %v: read plainly: %T %v\nread by the loader: %T %v", in.Dir != "", gerr, gerr, werr, werr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("Dir %v: renders differ:\nplainly:   %+v\nby loader: %+v", in.Dir != "", got, want)
			}
		}
	})
	t.Logf("%d directories read plainly", plain)
	if plain == 0 {
		t.Error("no directory was read plainly")
	}
}

// TestPlainReadDigest: a module whose every file the loader reads has one
// digest, read plainly or as the loader reads it.
func TestPlainReadDigest(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		modread.ModuleFile: "module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n",
		"shop.cue":         "package shop\nname: \"shop\"\n",
	})
	ctx := context.Background()
	plainly, err := New().ReadInstance(ctx, Instance{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	byLoader, err := readInstanceSnapshot(ctx, Limits{}.mustResolve(), Instance{Dir: dir}, true)
	if err != nil {
		t.Fatal(err)
	}
	if plainly.Digest() != byLoader.Digest() || plainly.Size() != byLoader.Size() {
		t.Fatalf("read plainly %s (%d bytes), by the loader %s (%d bytes)", plainly.Digest(), plainly.Size(), byLoader.Digest(), byLoader.Size())
	}
}
