package kernel_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"leasekit.dev/platform/kernel"
)

// TestRenderRefusesChangedPlatform: once a platform is built, a render
// whose platform directory holds other content than the build read (a
// file rewritten, added or removed) is refused with a *ContentError under
// either skew policy, before it evaluates; put back as it was, the
// directory renders again.
func TestRenderRefusesChangedPlatform(t *testing.T) {
	const platformFile = "platform.cue"
	for name, change := range map[string]func(t *testing.T, dir string){
		"rewritten": func(t *testing.T, dir string) {
			// The web catalog back to v1.0.0: the v1.4.0 instance would
			// be skewed, which the checks against the built platform
			// cannot see.
			rewrite(t, dir, platformFile, `"v1.4.0"`, `"v1.0.0"`)
		},
		"rewritten, same size": func(t *testing.T, dir string) { rewrite(t, dir, platformFile, `"v1.4.0"`, `"v1.0.1"`) },
		"rewritten, no longer loads": func(t *testing.T, dir string) {
			kernel.WriteFiles(t, dir, map[string]string{platformFile: "package platform\n\nname: {\n"})
		},
		"file added": func(t *testing.T, dir string) {
			kernel.WriteFiles(t, dir, map[string]string{"extra.cue": "package platform\n\nlabels: extra: \"x\"\n"})
		},
		"file removed": func(t *testing.T, dir string) {
			kernel.WriteFiles(t, dir, map[string]string{"labels.cue": "package platform\n\nlabels: extra: \"x\"\n"})
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := generated(t, acme)
			if name == "file removed" {
				// Built with a second file, which is then removed.
				change(t, dir)
				change = func(t *testing.T, dir string) { remove(t, filepath.Join(dir, "labels.cue")) }
			}
			original := snapshot(t, dir)
			k := kernel.New()
			p, err := k.BuildPlatform(context.Background(), dir)
			if err != nil {
				t.Fatal(err)
			}
			change(t, dir)
			for _, policy := range []kernel.SkewPolicy{kernel.SkewWarn, kernel.SkewRefuse} {
				in := shop(p, "v1.4.0", 2)
				in.Skew = policy
				_, err := k.Render(context.Background(), in)
				var ce *kernel.ContentError
				if !errors.As(err, &ce) {
					t.Fatalf("%v: render against a changed platform = %v, want a *ContentError", policy, err)
				}
				if ce.Dir != p.Dir || ce.Want != p.Digest || ce.Got == p.Digest || !validDigest(ce.Got) {
					t.Fatalf("%v: %+v, want Dir %s, Want %s and another digest", policy, ce, p.Dir, p.Digest)
				}
				var ke *kernel.Error
				if loads := !errors.As(err, &ke); loads != (ce.Err == nil) || (!loads && !strings.Contains(err.Error(), platformFile)) {
					t.Fatalf("%v: %v: the reason it no longer loads, if it does not, must be in the error", policy, err)
				}
			}
			restore(t, dir, original)
			if _, err := k.Render(context.Background(), shop(p, "v1.4.0", 2)); err != nil {
				t.Fatalf("render against the platform put back as it was built: %v", err)
			}
		})
	}
}

// TestPlatformDigest: a build's digest is a function of the content of
// the files it read: the same for two builds of one directory or of two
// directories holding the same files, and another for other content.
func TestPlatformDigest(t *testing.T) {
	k := kernel.New()
	build := func(dir string) *kernel.Platform {
		p, err := k.BuildPlatform(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, b := generated(t, acme), generated(t, acme)
	pa, pa2, pb := build(a), build(a), build(b)
	if !validDigest(pa.Digest) || pa.Digest != pa2.Digest || pa.Digest != pb.Digest {
		t.Fatalf("digests of one content: %q, %q, %q", pa.Digest, pa2.Digest, pb.Digest)
	}
	// A file the loader does not read is not part of the platform.
	kernel.WriteFiles(t, b, map[string]string{"README.md": "not CUE\n"})
	if pb := build(b); pb.Digest != pa.Digest {
		t.Fatalf("a README changed the digest: %q, %q", pb.Digest, pa.Digest)
	}
	rewrite(t, b, "platform.cue", `"v1.4.0"`, `"v1.4.1"`)
	if pb := build(b); pb.Digest == pa.Digest {
		t.Fatalf("another content, the same digest %q", pb.Digest)
	}
	// The module file is part of it.
	rewrite(t, a, "cue.mod/module.cue", `"v0.14.0"`, `"v0.15.0"`)
	if pa3 := build(a); pa3.Digest == pa.Digest {
		t.Fatalf("another module file, the same digest %q", pa3.Digest)
	}
}

// TestRenderRefusesUnboundPlatform: a Platform no build returned has no
// digest, and a render against it is refused.
func TestRenderRefusesUnboundPlatform(t *testing.T) {
	p := *build(t)
	p.Digest = ""
	_, err := kernel.New().Render(context.Background(), shop(&p, "v1.0.0", 1))
	var ce *kernel.ContentError
	if !errors.As(err, &ce) || ce.Want != "" || ce.Dir != p.Dir {
		t.Fatalf("render against a Platform with no digest = %v, want a *ContentError", err)
	}
}

var digestPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

func validDigest(d string) bool { return digestPattern.MatchString(d) }

// rewrite replaces old, which must occur, with new in the file name under
// dir.
func rewrite(t *testing.T, dir, name, old, new string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(regexp.QuoteMeta(old))
	if !re.Match(data) {
		t.Fatalf("%s holds no %s", name, old)
	}
	if err := os.WriteFile(p, re.ReplaceAll(data, []byte(new)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, name string) {
	t.Helper()
	if err := os.Remove(name); err != nil {
		t.Fatal(err)
	}
}

// snapshot returns the regular files under dir, by path.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// restore makes dir hold exactly the files of a snapshot.
func restore(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name := range snapshot(t, dir) {
		if _, ok := files[name]; !ok {
			remove(t, filepath.Join(dir, filepath.FromSlash(name)))
		}
	}
	kernel.WriteFiles(t, dir, files)
}
