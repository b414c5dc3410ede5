package platformmodule_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"testing"

	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"pgregory.net/rapid"
)

func genInput() *rapid.Generator[platformmodule.Input] {
	return rapid.Custom(func(t *rapid.T) platformmodule.Input {
		label := rapid.StringMatching(`[a-z0-9]([-a-z0-9]{0,20}[a-z0-9])?`)
		n := rapid.IntRange(0, 6).Draw(t, "catalogs")
		var cats []platformmodule.Catalog
		seen := map[string]bool{}
		for range n {
			major := rapid.IntRange(0, 3).Draw(t, "major")
			path := fmt.Sprintf("%s.example.com/%s@v%d", label.Draw(t, "host"), label.Draw(t, "name"), major)
			if seen[path] {
				continue
			}
			seen[path] = true
			kinds := rapid.SliceOfNDistinct(rapid.StringMatching(`[A-Z][a-zA-Z0-9]{0,10}`), 0, 4, rapid.ID[string]).Draw(t, "kinds")
			cats = append(cats, platformmodule.Catalog{
				Path:     path,
				Version:  genVersion(major).Draw(t, "version"),
				Kinds:    kinds,
				Disabled: rapid.Bool().Draw(t, "disabled"),
			})
		}
		return platformmodule.Input{
			Name:     rapid.OneOf(label, label, label, rapid.SampledFrom([]string{"con", "nul", "com1", "lpt2"})).Draw(t, "name"),
			Type:     rapid.SampledFrom([]string{"", "standard", "edge"}).Draw(t, "type"),
			Labels:   rapid.MapOfN(rapid.StringMatching(`([a-z]{1,8}\.io/)?[a-z][a-z0-9]{0,8}`), rapid.StringMatching(`([a-zA-Z0-9]([-a-zA-Z0-9_.]{0,10}[a-zA-Z0-9])?)?`), 0, 4).Draw(t, "labels"),
			Catalogs: cats,
		}
	})
}

// genVersion draws a semantic version of the given major version, with or
// without a leading 'v', a prerelease and build metadata.
func genVersion(major int) *rapid.Generator[string] {
	return rapid.Custom(func(t *rapid.T) string {
		v := fmt.Sprintf("%s%d.%d.%d", rapid.SampledFrom([]string{"", "v"}).Draw(t, "v"), major,
			rapid.IntRange(0, 20).Draw(t, "minor"), rapid.IntRange(0, 20).Draw(t, "patch"))
		v += rapid.SampledFrom([]string{"", "", "-rc.1", "-alpha", "-0.3.7"}).Draw(t, "prerelease")
		return v + rapid.SampledFrom([]string{"", "", "+build.5", "+exp.sha.5114f85"}).Draw(t, "build")
	})
}

// reservedName matches the platform names a CUE module path cannot hold:
// the device names Windows reserves.
var reservedName = regexp.MustCompile(`^(con|prn|aux|nul|com[1-9]|lpt[1-9])$`)

// TestGenerateProperty: a name a module path cannot hold is refused; for
// any other valid input, Generate is deterministic
// under reordering of the catalogs, and the kernel builds its output into a
// platform with the same name, type, labels and catalogs.
func TestGenerateProperty(t *testing.T) {
	tmp := t.TempDir()
	k := kernel.New()
	rapid.Check(t, func(t *rapid.T) {
		in := genInput().Draw(t, "input")
		files, err := platformmodule.Generate(in)
		if reservedName.MatchString(in.Name) {
			// A module path cannot hold it: refused, as the loader would.
			var ie *platformmodule.InputError
			if !errors.As(err, &ie) || ie.Field != "Name" {
				t.Fatalf("Generate with the name %q = %v, want an InputError for Name", in.Name, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("Generate(%+v): %v", in, err)
		}
		shuffled := in
		shuffled.Catalogs = rapid.Permutation(in.Catalogs).Draw(t, "order")
		again, err := platformmodule.Generate(shuffled)
		if err != nil {
			t.Fatal(err)
		}
		for name, data := range files {
			if !bytes.Equal(data, again[name]) {
				t.Fatalf("%s differs when the catalogs are reordered", name)
			}
		}

		p := buildFiles(t, k, tmp, files)
		wantType := in.Type
		if wantType == "" {
			wantType = "standard"
		}
		if p.Name != in.Name || p.Type != wantType || len(p.Labels) != len(in.Labels) {
			t.Fatalf("built %s/%s with labels %v from %+v", p.Name, p.Type, p.Labels, in)
		}
		for k, v := range in.Labels {
			if p.Labels[k] != v {
				t.Fatalf("label %s = %q, want %q", k, p.Labels[k], v)
			}
		}
		if len(p.Catalogs) != len(in.Catalogs) {
			t.Fatalf("built %d catalogs, want %d", len(p.Catalogs), len(in.Catalogs))
		}
		for _, c := range in.Catalogs {
			i := slices.IndexFunc(p.Catalogs, func(k kernel.Catalog) bool { return k.Path == c.Path })
			ok := i >= 0
			var got kernel.Catalog
			if ok {
				got = p.Catalogs[i]
			}
			if !ok || got.Version != c.Version || got.Enabled == c.Disabled || !slices.Equal(got.Kinds, slices.Sorted(slices.Values(c.Kinds))) {
				t.Fatalf("catalog %s built as %+v (found %v), want %+v", c.Path, got, ok, c)
			}
		}
	})
}

// TestHostileStringsStayData: strings built to break out of a CUE string
// literal are refused with an InputError, or, where a field accepts them,
// come back from the kernel exactly as given: data, never CUE.
func TestHostileStringsStayData(t *testing.T) {
	tmp := t.TempDir()
	k := kernel.New()
	hostile := rapid.SampledFrom([]string{
		`"`, `\`, `\(`, "\n", `"} evil: {"`, "\"\nevil: 1\n\"", `\(1+1)`, "#", "//", "\x00", "'", `"""`, "\u2028", "-", ".x",
	})
	rapid.Check(t, func(t *rapid.T) {
		pick := func(label, plain string) string {
			if rapid.Bool().Draw(t, label+" hostile") {
				return plain + hostile.Draw(t, label)
			}
			return plain
		}
		in := platformmodule.Input{
			Name:     pick("name", "ok"),
			Type:     pick("type", "edge"),
			Labels:   map[string]string{pick("key", "k"): pick("value", "v")},
			Catalogs: []platformmodule.Catalog{{Path: pick("path", "example.com/c") + "@v1", Version: pick("version", "v1.0.0"), Kinds: []string{pick("kind", "K")}}},
		}
		files, err := platformmodule.Generate(in)
		if err != nil {
			var ie *platformmodule.InputError
			if !errors.As(err, &ie) {
				t.Fatalf("Generate = %v, want an *InputError", err)
			}
			return
		}
		p := buildFiles(t, k, tmp, files)
		c := in.Catalogs[0]
		if p.Name != in.Name || p.Type != in.Type || !maps.Equal(p.Labels, in.Labels) ||
			len(p.Catalogs) != 1 || p.Catalogs[0].Path != c.Path || p.Catalogs[0].Version != c.Version || !slices.Equal(p.Catalogs[0].Kinds, c.Kinds) {
			t.Fatalf("input %+v came back as %+v", in, p)
		}
	})
}

// buildFiles writes files into a new directory under tmp and builds the
// platform there.
func buildFiles(t *rapid.T, k *kernel.Kernel, tmp string, files platformmodule.Files) *kernel.Platform {
	dir, err := os.MkdirTemp(tmp, "module")
	if err != nil {
		t.Fatal(err)
	}
	dirtree.MustWrite(t, dir, files)
	p, err := k.BuildPlatform(context.Background(), dir)
	if err != nil {
		t.Fatalf("BuildPlatform of the generated module %s: %v", files[platformmodule.PlatformFile], err)
	}
	return p
}
