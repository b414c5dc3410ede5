package platformtest

import (
	"bytes"
	"context"
	"fmt"

	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// A module is a drawn set of files and how the sequence names it.
type module struct {
	files  platformmodule.Files
	name   string // such as "module 3" or "module 2 with a syntax error"
	builds bool
}

// variants is how many modules that build Check draws from: few enough
// that a same-generation change often goes back to earlier files.
const variants = 6

// drawModule draws one of the generator's modules that build.
func (m *machine) drawModule() module {
	return generated(int(m.draw("module", 0, variants-1)))
}

// drawBroken draws a module the kernel refuses: a syntax error or a value
// the platform schema rejects.
func (m *machine) drawBroken() module {
	mod := generated(int(m.draw("module", 0, variants-1)))
	files := make(platformmodule.Files, len(mod.files))
	for name, data := range mod.files {
		files[name] = data
	}
	if m.drawBool("syntax error") {
		files[platformmodule.PlatformFile] = append(bytes.Clone(files[platformmodule.PlatformFile]), "\nname: {\n"...)
		return module{files: files, name: mod.name + " with a syntax error"}
	}
	files[platformmodule.PlatformFile] = append(bytes.Clone(files[platformmodule.PlatformFile]), "\ntype: 42\n"...)
	return module{files: files, name: mod.name + " with a value the schema refuses"}
}

// generated is variant v of a small platform module: one or two catalogs
// whose versions depend on v, so that variants differ byte for byte.
func generated(v int) module {
	in := platformmodule.Input{
		Name: "acme",
		Catalogs: []platformmodule.Catalog{
			{Path: "example.com/catalogs/web@v1", Version: fmt.Sprintf("v1.%d.0", v), Kinds: []string{"Deployment", "Service"}},
		},
	}
	if v%2 == 1 {
		in.Catalogs = append(in.Catalogs, platformmodule.Catalog{Path: "example.com/catalogs/db@v2", Version: fmt.Sprintf("v2.0.%d", v), Kinds: []string{"Database"}})
	}
	files, err := platformmodule.Generate(in)
	if err != nil {
		panic(fmt.Sprintf("platformtest: generating module %d: %v", v, err))
	}
	return module{files: files, name: fmt.Sprintf("module %d", v), builds: true}
}

// renderKernel renders the records Check leases, as a render path does.
var renderKernel = kernel.New()

// instanceFiles is the instance module Check renders against a leased
// record: one component of a kind the web catalog provides, which every
// module Check draws carries at a version no older than the one required.
func instanceFiles() map[string][]byte {
	return map[string][]byte{
		"cue.mod/module.cue": []byte("module: \"example.com/shop@v0\", language: version: \"v0.14.0\"\n"),
		"shop.cue": []byte(`package shop

name: "shop"
requires: "example.com/catalogs/web@v1": "v1.0.0"
components: web: {kind: "Deployment", catalog: "example.com/catalogs/web@v1"}
`),
	}
}

// renderWithKernel renders instanceFiles against rec as a render path
// does, with the record's skew policy.
func renderWithKernel(rec platform.Generated) error {
	_, err := renderKernel.Render(context.Background(), kernel.RenderInput{
		Platform: rec.Platform,
		Instance: kernel.Instance{Files: instanceFiles()},
		Skew:     rec.Skew,
	})
	return err
}
