package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"leasekit.dev/platform/kernel"
	"pgregory.net/rapid"
)

// TestContentBindingModel drives a platform directory through rewrites,
// additions, removals, rewrites to the same bytes and files the loader
// does not read, rebuilding now and then, against a model that holds the
// CUE files the last build read and those the directory holds now: a
// render is refused with a *ContentError exactly when they differ.
func TestContentBindingModel(t *testing.T) {
	k := kernel.New()
	rapid.Check(t, func(rt *rapid.T) {
		dir, err := os.MkdirTemp("", "binding")
		if err != nil {
			rt.Fatal(err)
		}
		defer os.RemoveAll(dir)
		write := func(name, data string) {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				rt.Fatal(err)
			}
		}
		base := platformModule(`name: "acme"
catalogs: "` + webPath + `": {version: "v1.4.0", kinds: ["Deployment", "Service"]}
`)
		for name, data := range base {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
				rt.Fatal(err)
			}
			write(name, data)
		}
		// The model: the extra CUE files, by name, as the directory holds
		// them now and as the last build read them.
		now := map[string]string{}
		built := map[string]string{}
		p, err := k.BuildPlatform(context.Background(), dir)
		if err != nil {
			rt.Fatal(err)
		}
		labelFile := func(name, value string) string {
			// Each file sets a label of its own: no two conflict.
			return fmt.Sprintf("package platform\n\nlabels: %q: %q\n", name, value)
		}
		names := []string{"a.cue", "b.cue", "c.cue"}

		rt.Repeat(map[string]func(*rapid.T){
			"write": func(t *rapid.T) {
				name := rapid.SampledFrom(names).Draw(t, "name")
				data := labelFile(name[:1], rapid.SampledFrom([]string{"x", "y"}).Draw(t, "value"))
				write(name, data)
				now[name] = data
			},
			"rewrite the same bytes": func(t *rapid.T) {
				if len(now) == 0 {
					t.Skip("no extra file")
				}
				name := rapid.SampledFrom(slices.Sorted(maps.Keys(now))).Draw(t, "name")
				write(name, now[name])
			},
			"remove": func(t *rapid.T) {
				if len(now) == 0 {
					t.Skip("no extra file")
				}
				name := rapid.SampledFrom(slices.Sorted(maps.Keys(now))).Draw(t, "name")
				if err := os.Remove(filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
				delete(now, name)
			},
			"write a file the loader does not read": func(t *rapid.T) {
				write(rapid.SampledFrom([]string{"README.md", "image.png"}).Draw(t, "name"),
					rapid.StringN(0, 20, -1).Draw(t, "data"))
			},
			"build": func(t *rapid.T) {
				q, err := k.BuildPlatform(context.Background(), dir)
				if err != nil {
					t.Fatal(err)
				}
				if maps.Equal(now, built) != (q.Digest == p.Digest) {
					t.Fatalf("model says unchanged %v, digests %s and %s", maps.Equal(now, built), p.Digest, q.Digest)
				}
				p, built = q, maps.Clone(now)
			},
			"render": func(t *rapid.T) {
				_, err := k.Render(context.Background(), shop(p, "v1.4.0", 1))
				changed := !maps.Equal(now, built)
				if changed != errors.As(err, new(*kernel.ContentError)) || (!changed && err != nil) {
					t.Fatalf("content changed %v: render = %v", changed, err)
				}
			},
		})
	})
}
