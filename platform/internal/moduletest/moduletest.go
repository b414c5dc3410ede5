package moduletest

import (
	"context"
	"fmt"
	"log"
	"os"
	"strings"
	"testing"

	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// The acme platform's catalogs.
const (
	WebPath   = "example.com/catalogs/web@v1"
	DBPath    = "example.com/catalogs/db@v0"
	BatchPath = "example.com/catalogs/batch@v2"
)

// Acme is the platform most tests render against: web enabled at v1.4.0,
// db disabled, batch enabled at v2.1.0.
var Acme = platformmodule.Input{
	Name:   "acme",
	Labels: map[string]string{"team": "platform"},
	Catalogs: []platformmodule.Catalog{
		{Path: WebPath, Version: "v1.4.0", Kinds: []string{"Deployment", "Service"}},
		{Path: DBPath, Version: "v0.3.0", Kinds: []string{"Database"}, Disabled: true},
		{Path: BatchPath, Version: "v2.1.0", Kinds: []string{"CronJob"}},
	},
}

// InstanceModule is the module file of every instance module here.
const InstanceModule = "module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"

// WriteModule writes files (slash-separated names) under a new temporary
// directory of t and returns it.
func WriteModule(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	if err := dirtree.Write(dir, files); err != nil {
		t.Fatal(err)
	}
	return dir
}

// WriteTemp writes files into a new temporary directory and returns it,
// for examples, which have no test to fail: it ends the program on error.
func WriteTemp(files map[string][]byte) string {
	dir, err := os.MkdirTemp("", "moduletest-example")
	if err != nil {
		log.Fatal(err)
	}
	if err := dirtree.Write(dir, files); err != nil {
		log.Fatal(err)
	}
	return dir
}

// Generated writes the generated platform module of in under a new
// temporary directory of t and returns it.
func Generated(t testing.TB, in platformmodule.Input) string {
	t.Helper()
	files, err := platformmodule.Generate(in)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for k, v := range files {
		m[k] = string(v)
	}
	return WriteModule(t, m)
}

// Build builds the acme platform in process with a new kernel.
func Build(t testing.TB) *kernel.Platform {
	t.Helper()
	p, err := kernel.New().BuildPlatform(context.Background(), Generated(t, Acme))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Instance returns an instance module whose package shop is body.
func Instance(body string) map[string][]byte {
	return map[string][]byte{
		"cue.mod/module.cue": []byte(InstanceModule),
		"shop.cue":           []byte("package shop\n\n" + strings.TrimSpace(body) + "\n"),
	}
}

// Shop is the render of an instance named shop, requiring version of the
// web catalog, with n components, against p.
func Shop(p *kernel.Platform, version string, n int) kernel.RenderInput {
	return kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: Instance(`name: "shop"
requires: "` + WebPath + `": "` + version + `"
` + Components(n))}}
}

// Components returns n components of the web catalog, alternating its
// kinds, each with its own image and port.
func Components(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "components: c%02d: {kind: %q, catalog: %q, replicas: %d, spec: {image: \"app:%d\", port: %d}}\n",
			i, []string{"Deployment", "Service"}[i%2], WebPath, i%3, i, 8000+i)
	}
	return b.String()
}

// PlatformModule returns a platform module whose package platform is body.
func PlatformModule(body string) map[string]string {
	return map[string]string{
		"cue.mod/module.cue": "module: \"platform.leasekit.dev/test@v0\"\nlanguage: version: \"v0.14.0\"\n",
		"platform.cue":       "package platform\n\n" + body,
	}
}

// Variant is variant v of a small platform module named acme, for tests
// that publish one module after another: the web catalog at v1.<v>.0 and,
// for odd v, the db catalog at v2.0.<v>, so that variants differ byte for
// byte. It panics if the module does not generate, which is a bug here.
func Variant(v int) platformmodule.Files {
	in := platformmodule.Input{
		Name: "acme",
		Catalogs: []platformmodule.Catalog{
			{Path: WebPath, Version: fmt.Sprintf("v1.%d.0", v), Kinds: []string{"Deployment", "Service"}},
		},
	}
	if v%2 == 1 {
		in.Catalogs = append(in.Catalogs, platformmodule.Catalog{Path: "example.com/catalogs/db@v2", Version: fmt.Sprintf("v2.0.%d", v), Kinds: []string{"Database"}})
	}
	files, err := platformmodule.Generate(in)
	if err != nil {
		panic(fmt.Sprintf("moduletest: generating variant %d: %v", v, err))
	}
	return files
}
