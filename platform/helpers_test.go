package platform_test

import (
	"bytes"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/platform"
	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// brokenFiles is a module the kernel refuses: a syntax error when syntax is
// true, else a value the platform schema rejects.
func brokenFiles(t tb, syntax bool) platformmodule.Files {
	t.Helper()
	files := moduletest.Variant(0)
	if syntax {
		files[platformmodule.PlatformFile] = append(bytes.Clone(files[platformmodule.PlatformFile]), "\nname: {\n"...)
	} else {
		files[platformmodule.PlatformFile] = append(bytes.Clone(files[platformmodule.PlatformFile]), "\ntype: 42\n"...)
	}
	return files
}

// readTree returns every regular file under dir by slash-separated path,
// and fails on anything else (a symbolic link, a device).
func readTree(t tb, dir string) platformmodule.Files {
	t.Helper()
	got, err := dirtree.Read(dir)
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	return got
}

func sameFiles(a, b platformmodule.Files) bool { return maps.EqualFunc(a, b, bytes.Equal) }

// checkTree fails unless dir holds exactly want.
func checkTree(t tb, dir string, want platformmodule.Files) {
	t.Helper()
	got := readTree(t, dir)
	if !sameFiles(got, want) {
		t.Fatalf("%s holds %v, want %v", dir, slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}
}

// newBooted returns a booted Publisher over a fresh root, without syncing.
func newBooted(t testing.TB, opts platform.PublisherOptions) *platform.Publisher {
	t.Helper()
	opts.NoSync = true
	p := platform.NewPublisher(filepath.Join(t.TempDir(), "platform"), opts)
	if err := p.Boot(); err != nil {
		t.Fatal(err)
	}
	return p
}

func generations(t tb, p *platform.Publisher) []int64 {
	t.Helper()
	var gens []int64
	for _, name := range dirtree.MustNames(t, p.Layout().Root) {
		rest, ok := strings.CutPrefix(name, "gen-")
		if !ok {
			continue
		}
		if i := strings.IndexByte(rest, '-'); i > 0 {
			rest = rest[:i] // gen-<n>-<digest>: a later content of generation n
		}
		g, err := strconv.ParseInt(rest, 10, 64)
		if err != nil {
			continue
		}
		if i, found := slices.BinarySearch(gens, g); !found {
			gens = slices.Insert(gens, i, g)
		}
	}
	return gens
}

// genDirs returns the paths of the generation directories under root:
// gen-<n> and gen-<n>-<digest>.
func genDirs(t tb, root string) []string {
	t.Helper()
	var dirs []string
	for _, name := range dirtree.MustNames(t, root) {
		if strings.HasPrefix(name, "gen-") {
			dirs = append(dirs, filepath.Join(root, name))
		}
	}
	return dirs
}

// tb is what the helpers need of a *testing.T or a *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

// strayEntries waits for the layout's background removals, then lists the
// entries of root that are not generation directories: at rest there are
// none.
func strayEntries(t tb, root string) []string {
	t.Helper()
	if err := (platform.Layout{Root: root}).Settle(); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	var stray []string
	for _, name := range dirtree.MustNames(t, root) {
		if !strings.HasPrefix(name, "gen-") {
			stray = append(stray, name)
		}
	}
	return stray
}

// renderInstance is an instance module with one component of the web
// catalog that moduleFiles carries.
func renderInstance(t tb) kernel.Instance {
	t.Helper()
	return kernel.Instance{Files: map[string][]byte{
		"cue.mod/module.cue": []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
		"shop.cue": []byte(`package shop

name: "shop"
requires: "example.com/catalogs/web@v1": "v1.0.0"
components: web: {kind: "Deployment", catalog: "example.com/catalogs/web@v1", replicas: 2, spec: {image: "shop:1", port: 8080}}
`),
	}}
}

// onDisk returns the generations with a directory on disk, ascending.
func onDisk(st platform.Stats) []int64 {
	var gens []int64
	for _, d := range st.Dirs {
		if !slices.Contains(gens, d.Identity.Key) {
			gens = append(gens, d.Identity.Key)
		}
	}
	return gens
}

// leaseCounts returns the outstanding leases per generation.
func leaseCounts(st platform.Stats) map[int64]int {
	n := map[int64]int{}
	for _, d := range st.Dirs {
		if d.Leases > 0 {
			n[d.Identity.Key] += d.Leases
		}
	}
	return n
}

// leased returns the leased generations, ascending.
func leased(st platform.Stats) []int64 {
	return slices.Sorted(maps.Keys(leaseCounts(st)))
}
