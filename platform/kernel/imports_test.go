package kernel_test

import (
	"context"
	"testing"

	"leasekit.dev/platform/kernel"
)

// TestImports: modules may import the standard library and packages of
// their own module; both load, with no registry.
func TestImports(t *testing.T) {
	k := kernel.New()
	dir := writeModule(t, map[string]string{
		"cue.mod/module.cue": "module: \"platform.leasekit.dev/acme@v0\"\nlanguage: version: \"v0.14.0\"\n",
		"defaults/d.cue":     "package defaults\n\nteam: \"platform\"\n",
		"platform.cue": `package platform

import (
	"strings"
	"platform.leasekit.dev/acme/defaults"
)

name: strings.ToLower("ACME")
labels: team: defaults.team
catalogs: "` + webPath + `": {version: "v1.4.0", kinds: ["Service"]}
`,
	})
	p, err := k.BuildPlatform(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "acme" || p.Labels["team"] != "platform" {
		t.Fatalf("built %+v", p)
	}
	out, err := k.Render(context.Background(), kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: map[string][]byte{
		"cue.mod/module.cue": []byte(instanceModule),
		"parts/p.cue":        []byte("package parts\n\nport: 8080\n"),
		"shop.cue": []byte(`package shop

import (
	"list"
	"example.com/shop/parts"
)

name: "shop"
requires: "` + webPath + `": "v1.0.0"
components: api: {kind: "Service", catalog: "` + webPath + `", spec: {port: parts.port, ports: list.Repeat([parts.port], 2)}}
`),
	}}})
	if err != nil {
		t.Fatal(err)
	}
	spec := out.Resources[0].Object["spec"].(map[string]any)
	if spec["port"] != float64(8080) || len(spec["ports"].([]any)) != 2 {
		t.Fatalf("spec %v", spec)
	}
}
