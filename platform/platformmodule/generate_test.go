package platformmodule_test

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"leasekit.dev/platform/platformmodule"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

var goldenInputs = map[string]platformmodule.Input{
	"minimal": {
		Name: "dev",
	},
	// The input as the design pins it: catalogs with a path and a
	// version, written as Semantic Versioning writes it, and no kinds.
	"pinned": {
		Name:     "p",
		Catalogs: []platformmodule.Catalog{{Path: "example.com/web@v1", Version: "1.0.0"}, {Path: "example.com/db@v0", Version: "v0.2.0+build.7"}},
	},
	"full": {
		Name:   "acme-prod",
		Type:   "edge",
		Labels: map[string]string{"team": "platform", "example.com/tier": "gold", "cost-center": ""},
		Catalogs: []platformmodule.Catalog{
			{Path: "example.com/catalogs/web@v1", Version: "v1.4.2", Kinds: []string{"Service", "Deployment"}},
			{Path: "acme.io/data/db@v0", Version: "v0.3.0-rc.1", Kinds: []string{"Database"}, Disabled: true},
			{Path: "example.com/catalogs/batch@v2", Version: "v2.0.0", Kinds: []string{"CronJob", "Job"}},
		},
	},
}

// TestGolden compares Generate's files with testdata/<case>/; run with
// -update to rewrite them.
func TestGolden(t *testing.T) {
	for name, in := range goldenInputs {
		t.Run(name, func(t *testing.T) {
			files, err := platformmodule.Generate(in)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join("testdata", name)
			if *update {
				os.RemoveAll(dir)
				for rel, data := range files {
					p := filepath.Join(dir, filepath.FromSlash(rel)+".golden")
					os.MkdirAll(filepath.Dir(p), 0o755)
					if err := os.WriteFile(p, data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			var golden []string
			filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					golden = append(golden, p)
				}
				return err
			})
			if len(golden) != len(files) {
				t.Fatalf("%d golden files in %s, Generate wrote %d (run with -update)", len(golden), dir, len(files))
			}
			for rel, data := range files {
				want, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)+".golden"))
				if err != nil {
					t.Fatalf("%v (run with -update)", err)
				}
				if !bytes.Equal(data, want) {
					t.Errorf("%s differs from its golden file:\n--- got\n%s\n--- want\n%s", rel, data, want)
				}
			}
		})
	}
}

func TestInvalidInput(t *testing.T) {
	web := platformmodule.Catalog{Path: "example.com/web@v1", Version: "v1.0.0", Kinds: []string{"Service"}}
	cases := []struct {
		name  string
		in    platformmodule.Input
		field string
		value string
	}{
		{"empty name", platformmodule.Input{}, "Name", ""},
		{"upper-case name", platformmodule.Input{Name: "Acme"}, "Name", "Acme"},
		{"name with quote", platformmodule.Input{Name: `a"b`}, "Name", `a"b`},
		{"long name", platformmodule.Input{Name: strings.Repeat("a", 64)}, "Name", strings.Repeat("a", 64)},
		{"bad type", platformmodule.Input{Name: "a", Type: "Edge Nodes"}, "Type", "Edge Nodes"},
		{"bad label key", platformmodule.Input{Name: "a", Labels: map[string]string{"-x": "y"}}, "Labels", "-x"},
		{"bad label value", platformmodule.Input{Name: "a", Labels: map[string]string{"x": "a\nb"}}, `Labels["x"]`, "a\nb"},
		{"path without major", platformmodule.Input{Name: "a", Catalogs: []platformmodule.Catalog{{Path: "example.com/web", Version: "v1.0.0", Kinds: []string{"S"}}}}, "Catalogs[0].Path", "example.com/web"},
		{"path with quote", platformmodule.Input{Name: "a", Catalogs: []platformmodule.Catalog{{Path: `example.com/w"b@v1`, Version: "v1.0.0", Kinds: []string{"S"}}}}, "Catalogs[0].Path", `example.com/w"b@v1`},
		{"path with newline", platformmodule.Input{Name: "a", Catalogs: []platformmodule.Catalog{{Path: "example.com/w\nx: 1@v1", Version: "v1.0.0", Kinds: []string{"S"}}}}, "Catalogs[0].Path", "example.com/w\nx: 1@v1"},
		{"version of another major", platformmodule.Input{Name: "a", Catalogs: []platformmodule.Catalog{{Path: "example.com/web@v1", Version: "v2.0.0", Kinds: []string{"S"}}}}, "Catalogs[0].Version", "v2.0.0"},
		{"version without v of another major", platformmodule.Input{Name: "a", Catalogs: []platformmodule.Catalog{{Path: "example.com/web@v1", Version: "2.0.0"}}}, "Catalogs[0].Version", "2.0.0"},
		{"duplicate path", platformmodule.Input{Name: "a", Catalogs: []platformmodule.Catalog{web, web}}, "Catalogs[1].Path", web.Path},
		{"empty kind", platformmodule.Input{Name: "a", Catalogs: []platformmodule.Catalog{{Path: "example.com/web@v1", Version: "v1.0.0", Kinds: []string{""}}}}, "Catalogs[0].Kinds[0]", ""},
		{"bad kind", platformmodule.Input{Name: "a", Catalogs: []platformmodule.Catalog{{Path: "example.com/web@v1", Version: "v1.0.0", Kinds: []string{"service"}}}}, "Catalogs[0].Kinds[0]", "service"},
		{"duplicate kind", platformmodule.Input{Name: "a", Catalogs: []platformmodule.Catalog{{Path: "example.com/web@v1", Version: "v1.0.0", Kinds: []string{"S", "S"}}}}, "Catalogs[0].Kinds[1]", "S"},
	}
	// Names a CUE module path cannot hold as an element: devices Windows
	// reserves, in any case a DNS label spells.
	for _, n := range []string{"con", "prn", "aux", "nul", "com1", "com9", "lpt1", "lpt2", "lpt9"} {
		cases = append(cases, struct {
			name  string
			in    platformmodule.Input
			field string
			value string
		}{"reserved name " + n, platformmodule.Input{Name: n}, "Name", n})
	}
	for _, v := range []string{"", "01.2.3", "v1.2", "1.2", "1.2.3.4", "V1.2.3", " 1.2.3", "1.2.3 ", "v 1.2.3", "1.2.3-", "1.2.3+", "1.2.3-01"} {
		cases = append(cases, struct {
			name  string
			in    platformmodule.Input
			field string
			value string
		}{fmt.Sprintf("version %q", v), platformmodule.Input{Name: "a", Catalogs: []platformmodule.Catalog{{Path: "example.com/web@v1", Version: v}}}, "Catalogs[0].Version", v})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			files, err := platformmodule.Generate(c.in)
			var ie *platformmodule.InputError
			if !errors.As(err, &ie) || ie.Field != c.field || ie.Value != c.value || ie.Rule == "" {
				t.Fatalf("Generate = %v, want an InputError for %s %q", err, c.field, c.value)
			}
			if files != nil {
				t.Fatalf("a refused Generate returned files: %v", files)
			}
			if !strings.Contains(err.Error(), c.field) || !strings.Contains(err.Error(), fmt.Sprintf("%q", c.value)) {
				t.Fatalf("error %q does not name the field and the value", err)
			}
		})
	}
}

// TestGenerateReportsEveryBadField: an input with several bad fields is
// refused with an *InputError for each, in the order of the fields.
func TestGenerateReportsEveryBadField(t *testing.T) {
	_, err := platformmodule.Generate(platformmodule.Input{
		Name:   "Acme",
		Type:   "Edge",
		Labels: map[string]string{"team": "a b"},
		Catalogs: []platformmodule.Catalog{
			{Path: "example.com/web@v1", Version: "2.0.0", Kinds: []string{"service"}},
			{Path: "example.com/web@v1", Version: "v1.0.0"},
		},
	})
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		t.Fatalf("Generate = %v, want every bad field joined", err)
	}
	var got []string
	for _, e := range j.Unwrap() {
		ie, ok := e.(*platformmodule.InputError)
		if !ok {
			t.Fatalf("%v is not an *InputError", e)
		}
		got = append(got, ie.Field)
	}
	want := []string{"Name", "Type", `Labels["team"]`, "Catalogs[0].Version", "Catalogs[0].Kinds[0]", "Catalogs[1].Path"}
	if !slices.Equal(got, want) {
		t.Fatalf("refused fields %q, want %q\n%v", got, want, err)
	}
	var ie *platformmodule.InputError
	if !errors.As(err, &ie) || ie.Field != "Name" {
		t.Fatalf("errors.As finds %+v, want the first, Name", ie)
	}
}
