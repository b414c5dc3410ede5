package publish_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
)

// A bundle is what the build step makes of a directory: here, a parsed
// and validated configuration.
type bundle struct {
	Name     string `json:"name"`
	Replicas int    `json:"replicas"`
}

// loadBundle is the build step: it reads the written directory, parses and
// validates it. A refusal leaves the current record as it was.
func loadBundle(_ context.Context, dir string) (bundle, error) {
	var b bundle
	data, err := os.ReadFile(filepath.Join(dir, "bundle.json"))
	if err != nil {
		return b, err
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return b, fmt.Errorf("bundle.json: %w", err)
	}
	if b.Replicas < 1 {
		return b, fmt.Errorf("bundle.json: replicas %d: must be at least 1", b.Replicas)
	}
	return b, nil
}

// A controller publishes a bundle per generation; a reader leases the
// current one. A changed bundle at the same generation gets a directory
// of its own, so the reader's directory stays as it was.
func Example() {
	root, _ := os.MkdirTemp("", "bundles-")
	defer os.RemoveAll(root)
	p := publish.New(filepath.Join(root, "bundles"), dirlife.IntCodec[int64]{Prefix: "gen-"}, loadBundle,
		publish.Options[int64, bundle, struct{}]{})
	if err := p.Boot(); err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	p.Publish(ctx, 7, dirlife.Files{"bundle.json": []byte(`{"name": "web", "replicas": 2}`)}, struct{}{})

	l, _ := p.Slot().Lease() // a reader starts against generation 7
	defer l.Release()

	// Generation 7 again, with other content: written beside, swapped in.
	rec, _ := p.Publish(ctx, 7, dirlife.Files{"bundle.json": []byte(`{"name": "web", "replicas": 3}`)}, struct{}{})
	fmt.Println("reader:", filepath.Base(l.Value().Dir), l.Value().Artifact.Replicas)
	fmt.Println("current:", strings.HasPrefix(filepath.Base(rec.Dir), "gen-7-"), rec.Artifact.Replicas)

	// A refused bundle leaves the current record as it was.
	_, err := p.Publish(ctx, 8, dirlife.Files{"bundle.json": []byte(`{"name": "web", "replicas": 0}`)}, struct{}{})
	_, cur, _ := p.Slot().Get()
	fmt.Println("refused:", err)
	fmt.Println("still current:", cur.Key, cur.Artifact.Replicas)
	// Output:
	// reader: gen-7 2
	// current: true 3
	// refused: bundle.json: replicas 0: must be at least 1
	// still current: 7 3
}

// Stale keys are refused: a reconcile that read an older generation never
// replaces a newer one.
func ExamplePublisher_Publish_stale() {
	root, _ := os.MkdirTemp("", "bundles-")
	defer os.RemoveAll(root)
	p := publish.New(filepath.Join(root, "bundles"), dirlife.IntCodec[int64]{Prefix: "gen-"}, loadBundle,
		publish.Options[int64, bundle, struct{}]{NoSync: true})
	p.Boot()
	ctx := context.Background()
	files := dirlife.Files{"bundle.json": []byte(`{"name": "web", "replicas": 1}`)}
	p.Publish(ctx, 3, files, struct{}{})
	_, err := p.Publish(ctx, 2, files, struct{}{})
	fmt.Println(err)
	// Output:
	// publish: key 2 is older than the current key 3: stale key
}
