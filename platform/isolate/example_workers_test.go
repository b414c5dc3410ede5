package isolate_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"leasekit.dev/platform/internal/moduletest"
	"leasekit.dev/platform/isolate"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// A Kernel with Workers evaluates in worker processes, which a budget can
// stop; the program's main (here, the test binary's TestMain) calls
// isolate.Main first.
//
// The example shows the time budget alone, with a margin on either side
// that no machine's speed closes: the good build and render take a small
// part of the ten seconds, the bomb below never ends, and it holds so
// little memory that the memory budget, set far out of its reach, never
// trips first.
func ExampleWorkers() {
	ws := &isolate.Workers{Size: 2, Timeout: 10 * time.Second, Memory: 8 << 30}
	defer ws.Close()
	k := ws

	files, _ := platformmodule.Generate(platformmodule.Input{
		Name:     "acme",
		Catalogs: []platformmodule.Catalog{{Path: "example.com/catalogs/web@v1", Version: "v1.4.0"}},
	})
	dir := moduletest.WriteTemp(files)
	defer os.RemoveAll(dir)
	ctx := context.Background()
	p, err := k.BuildPlatform(ctx, dir)
	if err != nil {
		log.Fatal(err)
	}
	module := []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n")
	out, err := k.Render(ctx, kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: map[string][]byte{
		"cue.mod/module.cue": module,
		"shop.cue": []byte(`package shop
name: "shop"
requires: "example.com/catalogs/web@v1": "v1.0.0"
components: web: {kind: "Deployment", catalog: "example.com/catalogs/web@v1"}
`),
	}}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Resources[0].Name)

	// Ten billion steps that keep CUE busy for hours in little memory:
	// the worker is killed at the time budget.
	_, err = k.Render(ctx, kernel.RenderInput{Platform: p, Instance: kernel.Instance{Files: map[string][]byte{
		"cue.mod/module.cue": module,
		"shop.cue": []byte(`package shop
import "list"
name: "shop"
requires: "example.com/catalogs/web@v1": "v1.0.0"
r: list.Range(0, 100000, 1)
x: [for i in r for j in r if i < 0 {i}]
`),
	}}})
	var budget *isolate.BudgetError
	fmt.Println(errors.As(err, &budget), budget.Budget)
	fmt.Println(err)
	// Output:
	// shop-web
	// true time
	// isolate: render instance: the worker was killed past the time budget of 10s (Workers.Timeout)
}
