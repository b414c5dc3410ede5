package bench

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"leasekit.dev/internal/baseline"
	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// TestMain serves as a kernel worker when the Workers of a benchmark
// start this binary as one.
func TestMain(m *testing.M) {
	isolate.Main()
	os.Exit(m.Run())
}

// kernelComponents are the instance sizes the render benchmarks measure.
var kernelComponents = []int{0, 1, 10, 20}

// writeDir writes files, slash-separated paths to contents, into a new
// directory and returns it.
func writeDir(t testing.TB, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	dirtree.MustWrite(t, dir, files)
	return dir
}

// catalogPath is the path of the i-th catalog of the benchmark platform.
func catalogPath(i int) string { return fmt.Sprintf("example.com/catalogs/c%02d@v1", i) }

// platform20 writes the benchmark platform, the kernel's own: 20
// catalogs of three kinds each, half their versions written without a 'v'.
func platform20(t testing.TB) string {
	t.Helper()
	return writeDir(t, platform20Files(t))
}

// builtPlatform20 is the benchmark platform, built by the kernel and by
// the naive kernel.
func builtPlatform20(t testing.TB) (*kernel.Platform, *baseline.NaivePlatform) {
	t.Helper()
	ctx := context.Background()
	dir := platform20(t)
	p, err := kernel.New().BuildPlatform(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	np, err := baseline.NaiveKernel{}.BuildPlatform(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	return p, np
}

// platform20Files are the files of the benchmark platform.
func platform20Files(t testing.TB) platformmodule.Files {
	t.Helper()
	return generate(t, platform20Input())
}

// platform20Input is the generator's input of the benchmark platform.
func platform20Input() platformmodule.Input {
	in := platformmodule.Input{Name: "bench", Labels: map[string]string{"team": "platform"}}
	for i := range 20 {
		in.Catalogs = append(in.Catalogs, platformmodule.Catalog{
			Path: catalogPath(i), Version: fmt.Sprintf("%s1.%d.0", []string{"v", ""}[i%2], i),
			Kinds: []string{"Deployment", "Service", "CronJob"},
		})
	}
	return in
}

// generate returns the files of the platform module of in.
func generate(t testing.TB, in platformmodule.Input) platformmodule.Files {
	t.Helper()
	files, err := platformmodule.Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// shopDir writes an instance module named shop with n components, the
// i-th of the catalog i%20, and returns its directory. A requirement of
// the newest version of catalog 0 makes it skew.
func shopDir(t testing.TB, n int, skew bool) string {
	t.Helper()
	return writeDir(t, shopFiles(n, skew))
}

// shopFiles are the files of shopDir's instance module.
func shopFiles(n int, skew bool) map[string][]byte {
	var b strings.Builder
	b.WriteString("package shop\n\nname: \"shop\"\nnamespace: \"prod\"\nlabels: tier: \"web\"\n")
	version := "v1.0.0"
	if skew {
		version = "1.9.0"
	}
	fmt.Fprintf(&b, "requires: %q: %q\n", catalogPath(0), version)
	for i := range min(n, 20) {
		if i > 0 {
			fmt.Fprintf(&b, "requires: %q: \"v1.0.0\"\n", catalogPath(i))
		}
	}
	for i := range n {
		fmt.Fprintf(&b, "components: c%02d: {kind: %q, catalog: %q, replicas: %d, labels: role: \"r%d\", spec: {image: \"app:%d\", port: %d}}\n",
			i, []string{"Deployment", "Service", "CronJob"}[i%3], catalogPath(i%20), i%3, i, i, 8000+i)
	}
	return map[string][]byte{
		"cue.mod/module.cue": []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
		"shop.cue":           []byte(b.String()),
	}
}

// TestNaiveKernelMatches: for the benchmark inputs, the naive kernel
// builds the same platform and renders the same resources, and the same
// skews, as the kernel.
func TestNaiveKernelMatches(t *testing.T) {
	ctx := context.Background()
	p, np := builtPlatform20(t)
	if np.Name != p.Name || np.Type != p.Type || !reflect.DeepEqual(np.Labels, p.Labels) || len(np.Catalogs) != len(p.Catalogs) {
		t.Fatalf("naive platform %+v, kernel's %+v", np, p)
	}
	for _, c := range p.Catalogs {
		nc := np.Catalogs[c.Path]
		if nc.Version != c.Version || (nc.Enabled == nil || *nc.Enabled) != c.Enabled || !reflect.DeepEqual(nc.Kinds, c.Kinds) {
			t.Fatalf("naive catalog %s %+v, kernel's %+v", c.Path, nc, c)
		}
	}
	for _, skew := range []bool{false, true} {
		for _, n := range kernelComponents {
			t.Run(fmt.Sprintf("components=%d/skew=%v", n, skew), func(t *testing.T) {
				inst := shopDir(t, n, skew)
				out, err := kernel.New().Render(ctx, kernel.RenderInput{Platform: p, Instance: kernel.Instance{Dir: inst}})
				if err != nil {
					t.Fatal(err)
				}
				resources, skews, err := baseline.NaiveKernel{}.Render(ctx, np, inst)
				if err != nil {
					t.Fatal(err)
				}
				if len(resources) != n || len(out.Resources) != n {
					t.Fatalf("naive rendered %d resources, the kernel %d, want %d", len(resources), len(out.Resources), n)
				}
				for i, r := range out.Resources {
					want := baseline.NaiveResource{Component: r.Component, Kind: r.Kind, Name: r.Name, Object: r.Object}
					if !reflect.DeepEqual(resources[i], want) {
						t.Fatalf("resource %d:\nnaive  %v\nkernel %v", i, resources[i], want)
					}
				}
				var want []baseline.NaiveSkew
				for _, d := range out.Diagnostics {
					want = append(want, baseline.NaiveSkew{Path: d.Path, InstanceVersion: d.InstanceVersion, PlatformVersion: d.PlatformVersion})
				}
				if len(want) != btoi(skew) || !reflect.DeepEqual(skews, want) {
					t.Fatalf("naive skews %v, kernel's %v; want %d", skews, want, btoi(skew))
				}
			})
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// BenchmarkBuildPlatform builds the 20-catalog platform.
func BenchmarkBuildPlatform(b *testing.B) {
	ctx := context.Background()
	dir := platform20(b)
	measure(b, "catalogs=20/",
		impl{"leasekit", func(*testing.B) func() error {
			k := kernel.New()
			return func() error { _, err := k.BuildPlatform(ctx, dir); return err }
		}},
		impl{"naive", func(*testing.B) func() error {
			return func() error { _, err := (baseline.NaiveKernel{}).BuildPlatform(ctx, dir); return err }
		}},
	)
}

// BenchmarkRender renders instances of 0 to 20 components, from their
// directories, against the 20-catalog platform: in this process
// (impl=leasekit), through a warm worker of isolate.Workers (impl=worker),
// and by the naive kernel.
func BenchmarkRender(b *testing.B) {
	ctx := context.Background()
	p, np := builtPlatform20(b)
	for _, n := range kernelComponents {
		inst := shopDir(b, n, false)
		in := kernel.RenderInput{Platform: p, Instance: kernel.Instance{Dir: inst}}
		measure(b, fmt.Sprintf("components=%d/", n),
			impl{"leasekit", func(*testing.B) func() error {
				k := kernel.New()
				return func() error { _, err := k.Render(ctx, in); return err }
			}},
			impl{"worker", func(b *testing.B) func() error {
				// A render through a warm worker: the instance read here and
				// sent, the platform read and the render evaluated there.
				k := &isolate.Workers{Size: 1}
				b.Cleanup(func() { k.Close() })
				if _, err := k.Render(ctx, in); err != nil {
					b.Fatal(err)
				}
				return func() error { _, err := k.Render(ctx, in); return err }
			}},
			impl{"naive", func(*testing.B) func() error {
				return func() error { _, _, err := (baseline.NaiveKernel{}).Render(ctx, np, inst); return err }
			}},
		)
	}
}
