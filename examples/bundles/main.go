// Command bundles runs the generic publisher outside CUE: a controller
// publishes a static site bundle per generation (an index page, a route
// table its build step parses and validates, a stylesheet) while readers
// serve from the bundle they lease. Each bundle arrives as a tree on disk,
// as an unpacked archive would, and is published from it with PublishFS,
// which copies it a buffer at a time, with LinkUnchanged: a file unchanged
// from a bundle on disk (the about page, the stylesheet of a variant seen
// before) is hard-linked, not written again. Generations advance, the current one
// changes content now and then (written beside and swapped in), some
// re-publishes are identical and some bundles are refused by the build
// step. Each reader hashes its leased directory when it leases it and
// again before it releases it; the two must equal the record's digest.
//
//	go run ./examples/bundles [--duration 3s] [--readers 4] [--dir DIR]
//
// The summary counts publishes by outcome, the bytes written against the
// bytes published, leased reads, leases refused after the first publish
// (always 0) and violations (always 0); the exit status is 1 when there
// is a violation.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
)

// A site is what the build step makes of a bundle directory.
type site struct {
	Routes map[string]string `json:"routes"` // path -> page
}

// loadSite is the build step: it parses routes.json and checks that every
// route names a page the bundle holds.
func loadSite(_ context.Context, dir string) (*site, error) {
	data, err := os.ReadFile(filepath.Join(dir, "routes.json"))
	if err != nil {
		return nil, err
	}
	var s site
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("routes.json: %w", err)
	}
	for path, page := range s.Routes {
		if _, err := os.Stat(filepath.Join(dir, page)); err != nil {
			return nil, fmt.Errorf("routes.json: route %q: page %q: %w", path, page, err)
		}
	}
	return &s, nil
}

// bundle is generation gen's site in variant v; a variant of 3 routes a
// page the bundle lacks, which the build step refuses. unpack writes it to
// disk.
func bundle(gen int64, v int) dirlife.Files {
	routes := fmt.Sprintf(`{"routes": {"/": "index.html", "/about": "about.html", "/v%d": "index.html"}}`, v)
	if v == 3 {
		routes = `{"routes": {"/": "missing.html"}}`
	}
	return dirlife.Files{
		"index.html":       fmt.Appendf(nil, "<h1>generation %d</h1>\n", gen),
		"about.html":       []byte("<p>about</p>\n"),
		"routes.json":      []byte(routes),
		"assets/style.css": fmt.Appendf(nil, "h1 { color: #%06x; }\n", v*0x111111),
	}
}

// unpack writes files under dir as a tree on disk, each file 0o644 and
// each directory 0o755 whatever the umask: the modes are published as
// they are, and are part of the digest.
func unpack(dir string, files dirlife.Files) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		for d := filepath.Dir(p); d != dir; d = filepath.Dir(d) {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			if err := os.Chmod(d, 0o755); err != nil {
				return err
			}
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		if err := os.Chmod(p, 0o644); err != nil {
			return err
		}
	}
	return os.Chmod(dir, 0o755)
}

// publishTree unpacks generation gen's bundle in variant v to a tree on
// disk under src and publishes it from there; the tree goes afterwards.
func publishTree(ctx context.Context, pub *publish.Publisher[int64, *site, struct{}], src string, gen int64, v int) error {
	tree, err := os.MkdirTemp(src, "tree-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tree)
	dir := filepath.Join(tree, "bundle")
	if err := unpack(dir, bundle(gen, v)); err != nil {
		return err
	}
	_, err = pub.PublishFS(ctx, gen, os.DirFS(dir), struct{}{})
	return err
}

// summary is what a run reports.
type summary struct {
	Published, Changed, Unchanged, Refused uint64
	BytesPublished, BytesWritten, Linked   uint64
	Reads, LeasesRefused, Violations       int64
	OnDisk                                 int
}

func run(ctx context.Context, root string, readers int, duration time.Duration, stderr io.Writer) (summary, error) {
	pub := publish.New(root, dirlife.IntCodec[int64]{Prefix: "gen-"}, loadSite, publish.Options[int64, *site, struct{}]{NoSync: true, LinkUnchanged: true})
	if err := pub.Boot(); err != nil {
		return summary{}, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { pub.Run(ctx) })

	src, err := os.MkdirTemp("", "bundles-src-")
	if err != nil {
		return summary{}, err
	}
	defer os.RemoveAll(src)

	var sum summary
	var reads, refused, violations atomic.Int64
	violate := func(format string, args ...any) {
		violations.Add(1)
		fmt.Fprintf(stderr, "violation: "+format+"\n", args...)
	}
	gen := int64(1)
	if err := publishTree(ctx, pub, src, gen, 0); err != nil {
		return summary{}, err
	}
	stop := make(chan struct{})
	for range readers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				l, ok := pub.Slot().Lease()
				if !ok {
					refused.Add(1)
					continue
				}
				rec := l.Value()
				if d, err := digestDir(rec.Dir); err != nil || d != rec.Digest {
					violate("%s at lease: digest %v, %v; want %v", rec.Dir, d, err, rec.Digest)
				}
				time.Sleep(time.Millisecond) // serve a request or two
				if d, err := digestDir(rec.Dir); err != nil || d != rec.Digest {
					violate("%s at release: digest %v, %v; want %v", rec.Dir, d, err, rec.Digest)
				}
				l.Release()
				reads.Add(1)
			}
		})
	}
	// The first four publishes run whatever the duration, so that every
	// run, on any machine, has each outcome: changed files (1, 2), a
	// refused build (3) and a new generation (4).
	deadline := time.Now().Add(duration)
	for i := 1; i <= 4 || time.Now().Before(deadline); i++ {
		switch i % 4 {
		case 0:
			gen++ // a new generation
		}
		publishTree(ctx, pub, src, gen, i%5%4) // variant 3 is refused by the build step
		time.Sleep(5 * time.Millisecond)
	}
	close(stop)
	cancel()
	wg.Wait()
	pub.Reclaim()
	st := pub.Stats()
	sum.Published, sum.Changed, sum.Unchanged, sum.Refused = st.Publishes-st.Changes, st.Changes, st.Unchanged, st.FailedBuilds
	sum.BytesPublished, sum.BytesWritten, sum.Linked = st.BytesPublished, st.BytesWritten, st.FilesLinked
	sum.Reads, sum.LeasesRefused, sum.Violations = reads.Load(), refused.Load(), violations.Load()
	sum.OnDisk = len(st.Dirs)
	return sum, nil
}

// linked is a layout under Link, as the publisher's is: its DigestFiles
// is the digest of files written read-only. It writes nothing, so its
// Linker offers no source.
var linked = dirlife.Layout[int64]{Link: noSources{}}

// noSources is a Linker that offers no source and records nothing.
type noSources struct{}

func (noSources) Source(dirlife.File) (string, dirlife.File, bool) { return "", dirlife.File{}, false }
func (noSources) Found(string, []dirlife.File)                     {}
func (noSources) Gone(string)                                      {}

// digestDir reads dir back and returns the digest of what it holds.
func digestDir(dir string) (dirlife.Digest, error) {
	files := dirlife.Files{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		return dirlife.Digest{}, err
	}
	return linked.DigestFiles(files)
}

func main() {
	fs := flag.NewFlagSet("bundles", flag.ExitOnError)
	duration := fs.Duration("duration", 3*time.Second, "how long to publish")
	readers := fs.Int("readers", 4, "concurrent readers")
	dir := fs.String("dir", "", "the bundle root, which the publisher empties at start (default: a temporary directory, removed at exit)")
	fs.Parse(os.Args[1:])
	root := *dir
	if root == "" {
		tmp, err := os.MkdirTemp("", "bundles-")
		if err != nil {
			fmt.Fprintln(os.Stderr, "bundles:", err)
			os.Exit(1)
		}
		defer os.RemoveAll(tmp)
		root = filepath.Join(tmp, "bundles")
	}
	sum, err := run(context.Background(), root, *readers, *duration, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bundles:", err)
		os.Exit(1)
	}
	fmt.Printf("published %d new generations, %d changes at the current one, %d identical, %d refused by the build step\n",
		sum.Published, sum.Changed, sum.Unchanged, sum.Refused)
	fmt.Printf("bytes: %d written of %d published, %d files linked instead of written\n", sum.BytesWritten, sum.BytesPublished, sum.Linked)
	fmt.Printf("reads: %d leased reads, %d leases refused after the first publish\n", sum.Reads, sum.LeasesRefused)
	fmt.Printf("directories on disk at the end: %d\n", sum.OnDisk)
	fmt.Printf("violations: %d\n", sum.Violations)
	if sum.Violations != 0 {
		os.Exit(1)
	}
}
