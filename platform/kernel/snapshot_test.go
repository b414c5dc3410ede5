package kernel

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"leasekit.dev/platform/kernel/internal/modread"
)

// TestSnapshotRendersAsTheInstance: for any instance, given as Dir or as
// Files, a render of the snapshot ReadInstance takes of it is the render
// of the instance itself, error text included; the snapshot's digest
// depends on its bytes only, and a render of it reads nothing of the
// instance again: once the directory is rewritten, the snapshot still
// renders what was read.
func TestSnapshotRendersAsTheInstance(t *testing.T) {
	p := labeledPlatform(t)
	ctx := context.Background()
	k := New()
	rapid.Check(t, func(t *rapid.T) {
		body, _ := drawInstance(t)
		if rapid.Bool().Draw(t, "brokenSyntax") {
			body += "\ncomponents: broken: {\n" // past the package clause: found by the render, not the read
		}
		files := map[string][]byte{
			modread.ModuleFile: []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
			"shop.cue":         []byte(body),
		}
		var in Instance
		if rapid.Bool().Draw(t, "onDisk") {
			dir, err := os.MkdirTemp("", "snapshot-")
			if err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(dir)
			written := map[string]string{}
			for name, data := range files {
				written[name] = string(data)
			}
			writeFiles(t, dir, written)
			in.Dir = dir
		} else {
			in.Files = files
		}
		want, werr := k.Render(ctx, RenderInput{Platform: p, Instance: in})

		s, err := k.ReadInstance(ctx, in)
		if err != nil {
			t.Fatalf("ReadInstance: %v", err)
		}
		var size int64
		for _, data := range files {
			size += int64(len(data))
		}
		if s.Size() != size {
			t.Fatalf("Size() = %d, the files hold %d bytes", s.Size(), size)
		}
		wantDir := "instance"
		if in.Dir != "" {
			wantDir = in.Dir
		}
		if s.Dir() != wantDir {
			t.Fatalf("Dir() = %q, want %q", s.Dir(), wantDir)
		}
		// The same bytes in memory have the same digest.
		mem, err := k.ReadInstance(ctx, Instance{Files: files})
		if err != nil {
			t.Fatal(err)
		}
		if s.Digest() != mem.Digest() || !strings.HasPrefix(s.Digest(), "sha256:") || len(s.Digest()) != len("sha256:")+64 {
			t.Fatalf("digest %q from %q, %q from memory", s.Digest(), s.Dir(), mem.Digest())
		}

		// The instance changes after the read: the snapshot does not.
		if in.Dir != "" {
			if err := os.WriteFile(filepath.Join(in.Dir, "shop.cue"), []byte("package shop\nname: 1\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			files["shop.cue"] = []byte("package shop\nname: 1\n")
		}
		got, gerr := k.Render(ctx, RenderInput{Platform: p, Snapshot: s})
		if fmt.Sprint(gerr) != fmt.Sprint(werr) || reflect.TypeOf(gerr) != reflect.TypeOf(werr) {
			t.Fatalf("snapshot's render failed with %T %v, the instance's with %T %v\n%s", gerr, gerr, werr, werr, body)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("snapshot's render differs from the instance's\n%s", body)
		}
		changed, err := k.ReadInstance(ctx, in)
		if err == nil && changed.Digest() == s.Digest() {
			t.Fatal("a changed instance read with the same digest")
		}
	})
}

// TestReadInstanceRefusals: ReadInstance refuses what Render refuses
// before it evaluates, with the same error, and Render refuses an input
// with both an Instance and a Snapshot.
func TestReadInstanceRefusals(t *testing.T) {
	ctx := context.Background()
	k := New()
	p := buildTestPlatform(t, "bare", "")
	link := t.TempDir()
	writeFiles(t, link, map[string]string{modread.ModuleFile: "module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"})
	if err := os.Symlink("/etc/passwd", filepath.Join(link, "shop.cue")); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		in   Instance
		want string
	}{
		{"none", ctx, Instance{}, "no instance"},
		{"both", ctx, Instance{Dir: "x", Files: map[string][]byte{}}, "both Dir and Files"},
		{"missing dir", ctx, Instance{Dir: filepath.Join(t.TempDir(), "absent")}, "absent"},
		{"link out", ctx, Instance{Dir: link}, "shop.cue"},
		{"bad path", ctx, Instance{Files: map[string][]byte{"../x.cue": nil}}, `"../x.cue"`},
		{"cancelled", cancelled, Instance{Files: map[string][]byte{"x.cue": nil}}, context.Canceled.Error()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := k.ReadInstance(tc.ctx, tc.in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ReadInstance: %v, want an error naming %s", err, tc.want)
			}
			_, rerr := k.Render(tc.ctx, RenderInput{Platform: p, Instance: tc.in})
			if fmt.Sprint(rerr) != fmt.Sprint(err) {
				t.Fatalf("ReadInstance failed with %v, Render with %v", err, rerr)
			}
		})
	}
	if _, err := k.ReadInstance(ctx, Instance{Dir: link}); !errors.As(err, new(*FileError)) {
		t.Fatalf("a link out: %v, want a *FileError", err)
	}
	s, err := k.ReadInstance(ctx, Instance{Files: map[string][]byte{
		modread.ModuleFile: []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
		"shop.cue":         []byte("package shop\nname: \"shop\"\nrequires: {}\n"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = k.Render(ctx, RenderInput{Platform: p, Snapshot: s, Instance: Instance{Dir: "x"}})
	if err == nil || !strings.Contains(err.Error(), "both an Instance and a Snapshot") {
		t.Fatalf("Render of both: %v", err)
	}
	if _, err := k.Render(ctx, RenderInput{Platform: p, Snapshot: s}); err != nil {
		t.Fatalf("Render of the snapshot alone: %v", err)
	}
}

// TestPlatformSize: a built platform's Size is the bytes its build read.
func TestPlatformSize(t *testing.T) {
	files := platformFiles("")
	dir := t.TempDir()
	writeFiles(t, dir, files)
	p, err := New().BuildPlatform(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, data := range files {
		want += int64(len(data))
	}
	if p.Size() != want {
		t.Fatalf("Size() = %d, the module holds %d bytes", p.Size(), want)
	}
	if (&Platform{}).Size() != 0 {
		t.Fatal("a Platform no build returned has a size")
	}
}

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
