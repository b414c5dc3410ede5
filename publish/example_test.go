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

// A tree arrives on disk (an unpacked archive, a rendered bundle) and is
// published from it, copied a buffer at a time. Its record's digest is
// that of what was written, the one Publish gives the same files; the
// same tree again is Unchanged, and keeps its directory.
func ExamplePublisher_PublishFS() {
	root, _ := os.MkdirTemp("", "bundles-")
	defer os.RemoveAll(root)
	src := filepath.Join(root, "unpacked")
	os.Mkdir(src, 0o755)
	os.WriteFile(filepath.Join(src, "bundle.json"), []byte(`{"name": "web", "replicas": 2}`), 0o644)
	os.Chmod(filepath.Join(src, "bundle.json"), 0o644) // the mode is published as it is, whatever the umask

	var outcomes []string
	p := publish.New(filepath.Join(root, "bundles"), dirlife.IntCodec[int64]{Prefix: "gen-"}, loadBundle,
		publish.Options[int64, bundle, struct{}]{
			NoSync:    true,
			OnPublish: func(ev publish.PublishEvent[int64]) { outcomes = append(outcomes, ev.Outcome.String()) },
		})
	if err := p.Boot(); err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	rec, err := p.PublishFS(ctx, 1, os.DirFS(src), struct{}{})
	if err != nil {
		fmt.Println(err)
		return
	}
	want, _ := dirlife.Layout[int64]{}.DigestFiles(dirlife.Files{"bundle.json": []byte(`{"name": "web", "replicas": 2}`)})
	again, _ := p.PublishFS(ctx, 1, os.DirFS(src), struct{}{})
	fmt.Println(filepath.Base(rec.Dir), rec.Artifact.Replicas)
	fmt.Println("the digest Publish gives the same files:", rec.Digest == want)
	fmt.Println("again:", filepath.Base(again.Dir), outcomes)
	// Output:
	// gen-1 2
	// the digest Publish gives the same files: true
	// again: gen-1 [published unchanged]
}

// A reader releases its lease on a replaced record; to wait until that
// record's directory is gone, call Reclaim, then Settle. The same two
// calls wait for it while Run runs, which the release wakes to remove the
// directory on its own: whichever removes it, Settle returns once its
// tree is gone.
func ExamplePublisher_Reclaim() {
	root, _ := os.MkdirTemp("", "bundles-")
	defer os.RemoveAll(root)
	dir := filepath.Join(root, "bundles")
	p := publish.New(dir, dirlife.IntCodec[int64]{Prefix: "gen-"}, loadBundle,
		publish.Options[int64, bundle, struct{}]{NoSync: true})
	if err := p.Boot(); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go p.Run(ctx)

	p.Publish(ctx, 1, dirlife.Files{"bundle.json": []byte(`{"name": "web", "replicas": 1}`)}, struct{}{})
	l, _ := p.Slot().Lease() // a reader of generation 1
	p.Publish(ctx, 2, dirlife.Files{"bundle.json": []byte(`{"name": "web", "replicas": 2}`)}, struct{}{})
	fmt.Println("while leased:", entries(dir))

	l.Release()
	p.Reclaim()
	if err := p.Settle(ctx); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("released:", entries(dir))
	// Output:
	// while leased: [gen-1 gen-2]
	// released: [gen-2]
}

// entries lists dir, leaving out the files with which the layout marks
// and locks a directory it owns where extended attributes are missing.
func entries(dir string) []string {
	des, _ := os.ReadDir(dir)
	var names []string
	for _, de := range des {
		if de.Name() != ".dirlife-root" && de.Name() != ".dirlife-lock" {
			names = append(names, de.Name())
		}
	}
	return names
}
