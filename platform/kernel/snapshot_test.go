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
