package platform_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"leasekit.dev/platform"
	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
	"leasekit.dev/publish"
)

// shopInstance is an instance module with one component.
var shopInstance = kernel.Instance{Files: map[string][]byte{
	"cue.mod/module.cue": []byte("module: \"example.com/shop@v0\"\nlanguage: version: \"v0.14.0\"\n"),
	"shop.cue": []byte(`package shop

name: "shop"
requires: "example.com/catalogs/web@v1": "v1.4.0"
components: web: {kind: "Deployment", catalog: "example.com/catalogs/web@v1", replicas: 2, spec: {image: "shop:1", port: 8080}}
`),
}}

// acme generates the platform module of one Platform resource's spec.
func acme(version string) platformmodule.Files {
	files, err := platformmodule.Generate(platformmodule.Input{
		Name:     "acme",
		Catalogs: []platformmodule.Catalog{{Path: "example.com/catalogs/web@v1", Version: version, Kinds: []string{"Deployment"}}},
	})
	if err != nil {
		log.Fatal(err)
	}
	return files
}

// The reconcile path and the render path of an operator, with the
// Publisher keeping them in the safe order.
func ExamplePublisher() {
	platformDir, _ := os.MkdirTemp("", "platform")
	defer os.RemoveAll(platformDir)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	pub := platform.NewPublisher(filepath.Join(platformDir, "modules"), platform.PublisherOptions{})
	if err := pub.Boot(); err != nil { // empties the directory before any reader
		log.Fatal(err)
	}
	go pub.Run(ctx) // removes superseded generations as their leases end

	// reconciler: the Platform resource's generation 1
	rec, err := pub.Publish(ctx, 1, acme("v1.4.0"), kernel.SkewWarn)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("published generation", rec.Generation)

	// render path: lease, render with the record's skew policy, release
	out, rec, err := pub.Render(ctx, shopInstance)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range out.Resources {
		fmt.Println("generation", rec.Generation, "renders", r.Kind, r.Name)
	}

	// the same generation again: nothing is written or built
	if _, err := pub.Publish(ctx, 1, acme("v1.4.0"), kernel.SkewWarn); err != nil {
		log.Fatal(err)
	}
	// the resource changed: generation 2 supersedes 1, which Run removes
	if _, err := pub.Publish(ctx, 2, acme("v1.5.0"), kernel.SkewWarn); err != nil {
		log.Fatal(err)
	}
	// a late reconcile of generation 1 is refused
	_, err = pub.Publish(ctx, 1, acme("v1.4.0"), kernel.SkewWarn)
	fmt.Println(errors.Is(err, publish.ErrStale), err)

	st := pub.Stats()
	fmt.Println("current:", st.Current.Key, "publishes:", st.Publishes, "unchanged:", st.Unchanged)
	// Output:
	// published generation 1
	// generation 1 renders Deployment shop-web
	// true platform: generation 1 is older than the current generation 2: stale key
	// current: 2 publishes: 2 unchanged: 1
}

// The render path: lease the current record, render against it with its
// skew policy, release. The lease keeps the record's directory on disk,
// unchanged, until it is released, whatever is published meanwhile.
func ExampleStore_Lease() {
	root, _ := os.MkdirTemp("", "platform")
	defer os.RemoveAll(root)
	pub := platform.NewPublisher(filepath.Join(root, "modules"), platform.PublisherOptions{})
	if err := pub.Boot(); err != nil {
		log.Fatal(err)
	}
	ctx := context.Background()
	if _, err := pub.Publish(ctx, 1, acme("v1.4.0"), kernel.SkewRefuse); err != nil {
		log.Fatal(err)
	}
	s := pub.Store()

	rec, release, ok := s.Lease()
	if !ok {
		log.Fatal(platform.ErrNotReady)
	}
	defer release()

	// generation 2 lands while the render runs
	if _, err := pub.Publish(ctx, 2, acme("v1.5.0"), kernel.SkewRefuse); err != nil {
		log.Fatal(err)
	}
	out, err := kernel.New().Render(ctx, kernel.RenderInput{Platform: rec.Platform, Instance: shopInstance, Skew: rec.Skew})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("rendered", len(out.Resources), "resource against generation", rec.Generation)
	onDisk, _ := pub.Layout().Generations()
	fmt.Println("current:", s.Generation(), "leased:", s.Leased(), "on disk:", onDisk)
	// Output:
	// rendered 1 resource against generation 1
	// current: 2 leased: [1] on disk: [1 2]
}

// A Layout keeps one directory per generation; Prune keeps the current and
// the leased ones.
func ExampleLayout() {
	root, _ := os.MkdirTemp("", "platform")
	defer os.RemoveAll(root)
	l := platform.Layout{Root: filepath.Join(root, "modules")}
	if err := l.Reset(); err != nil {
		log.Fatal(err)
	}
	for gen, version := range map[int64]string{1: "v1.4.0", 2: "v1.5.0", 3: "v1.6.0"} {
		if _, err := l.Write(gen, acme(version)); err != nil {
			log.Fatal(err)
		}
	}
	gens, _ := l.Generations()
	fmt.Println("written:", gens, filepath.Base(l.Dir(3)))

	if err := l.Prune(3, 1); err != nil { // current 3, generation 1 leased
		log.Fatal(err)
	}
	gens, _ = l.Generations()
	fmt.Println("kept:", gens)

	_, err := l.Write(0, acme("v1.4.0"))
	fmt.Println(err)
	// Output:
	// written: [1 2 3] gen-3
	// kept: [1 3]
	// platform: generation 0: generations start at 1
}

// A resync renders every object again; the memo answers what did not
// change, and the key says what a render was a function of: what it
// reads of the platform, not the platform's generation.
func ExamplePublisher_RenderLeased() {
	platformDir, _ := os.MkdirTemp("", "platform")
	defer os.RemoveAll(platformDir)
	ctx := context.Background()
	pub := platform.NewPublisher(filepath.Join(platformDir, "modules"), platform.PublisherOptions{MemoBudget: 8 << 20})
	if err := pub.Boot(); err != nil {
		log.Fatal(err)
	}
	render := func() platform.RenderKey {
		rec, release, _ := pub.Store().Lease()
		defer release()
		_, key, err := pub.RenderLeased(ctx, rec, shopInstance)
		if err != nil {
			log.Fatal(err)
		}
		return key
	}
	publish := func(gen int64, catalogs ...platformmodule.Catalog) {
		files, err := platformmodule.Generate(platformmodule.Input{Name: "acme", Catalogs: catalogs})
		if err != nil {
			log.Fatal(err)
		}
		if _, err := pub.Publish(ctx, gen, files, kernel.SkewWarn); err != nil {
			log.Fatal(err)
		}
	}
	web := platformmodule.Catalog{Path: "example.com/catalogs/web@v1", Version: "v1.4.0", Kinds: []string{"Deployment"}}
	db := platformmodule.Catalog{Path: "example.com/catalogs/db@v1", Version: "v1.0.0"}

	publish(1, web)
	first := render()
	render() // a resync
	st := pub.Stats().Memo
	fmt.Println("hits", st.Hits, "misses", st.Misses, "entries", st.Entries)

	// a new generation that adds a catalog the shop does not require: the
	// shop's render reads the same, so its key and its entry stay
	publish(2, web, db)
	fmt.Println("same key:", render() == first, "hits", pub.Stats().Memo.Hits)

	// a bump of the catalog it requires: a new key, an evaluation
	web.Version = "v1.5.0"
	publish(3, web, db)
	fmt.Println("same key:", render() == first, "misses", pub.Stats().Memo.Misses)
	// Output:
	// hits 1 misses 1 entries 1
	// same key: true hits 2
	// same key: false misses 2
}
