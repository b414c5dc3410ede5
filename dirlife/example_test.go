package dirlife_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"testing/fstest"

	"leasekit.dev/dirlife"
)

// A reconciler writes each generation's module, then prunes to the current
// generation and the ones readers still hold.
func ExampleLayout() {
	tmp, err := os.MkdirTemp("", "dirlife-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	modules := dirlife.Layout[int64]{
		Root:  filepath.Join(tmp, "platform"),
		Codec: dirlife.IntCodec[int64]{Prefix: "gen-"},
	}
	if err := modules.Reset(); err != nil { // at boot: disk state is rebuilt from the source of truth
		log.Fatal(err)
	}
	for gen := int64(8); gen <= 10; gen++ {
		files := dirlife.Files{
			"cue.mod/module.cue": []byte(`module: "example.com/platform@v0"` + "\n"),
			"platform.cue":       fmt.Appendf(nil, "generation: %d\n", gen),
		}
		if _, err := modules.Write(gen, files); err != nil {
			log.Fatal(err)
		}
	}
	ids, _ := modules.IDs()
	fmt.Println("written:", ids)

	current, leased := int64(10), []int64{8} // a reader still holds generation 8
	if err := modules.Prune(append(leased, current)...); err != nil {
		log.Fatal(err)
	}
	ids, _ = modules.IDs()
	fmt.Println("kept:", ids)
	data, _ := os.ReadFile(filepath.Join(modules.Dir(10), "platform.cue"))
	fmt.Print(string(data))
	// Output:
	// written: [8 9 10]
	// kept: [8 10]
	// generation: 10
}

// Names are checked before anything is written.
func ExampleNameError() {
	modules := dirlife.Layout[int64]{Root: os.TempDir() + "/never-written", Codec: dirlife.IntCodec[int64]{Prefix: "gen-"}}
	_, err := modules.Write(1, dirlife.Files{"a/../../etc/passwd": nil})
	fmt.Println(err)
	// Output: dirlife: name "a/../../etc/passwd": escapes the directory
}

// Prune refuses a directory the layout did not create.
func ExampleErrNotOwned() {
	home, _ := os.MkdirTemp("", "home")
	defer os.RemoveAll(home)
	os.WriteFile(filepath.Join(home, ".bashrc"), nil, 0o644)

	mistaken := dirlife.Layout[int64]{Root: home, Codec: dirlife.IntCodec[int64]{Prefix: "gen-"}}
	err := mistaken.Prune()
	fmt.Println(err != nil, errors.Is(err, dirlife.ErrNotOwned))
	// Output: true true
}

// A Files map that would not survive a copy to Windows or macOS is
// refused before anything is written, with the name and the rule.
func ExampleNameError_portable() {
	tmp, err := os.MkdirTemp("", "dirlife-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	l := dirlife.Layout[int64]{Root: filepath.Join(tmp, "root"), Codec: dirlife.IntCodec[int64]{Prefix: "gen-"}}

	for _, files := range []dirlife.Files{
		{"logs/nul.txt": nil},
		{"README": nil, "readme": nil},
	} {
		_, err := l.Write(1, files)
		var ne *dirlife.NameError
		if errors.As(err, &ne) {
			fmt.Printf("%q: %s\n", ne.Name, ne.Rule)
		}
	}
	// Output:
	// "logs/nul.txt": has an element "nul.txt" that is a reserved device name on Windows (NUL)
	// "readme": differs only by case from another name, and the two collide on a case-insensitive filesystem: "README" and "readme"
}

func ExampleIntCodec() {
	c := dirlife.IntCodec[int64]{Prefix: "gen-"}
	_, ok := c.Parse("gen-010") // only the canonical form is an ID
	id, _ := c.Parse("gen-10")
	fmt.Println(c.Format(10), id, ok)
	// Output: gen-10 10 false
}

// With DeferRemoval, Prune returns once what it removes is out of every
// ID's path; Settle waits for the removal itself, after which the root
// holds only its IDs' directories.
func ExampleLayout_Settle() {
	tmp, err := os.MkdirTemp("", "dirlife-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)

	modules := dirlife.Layout[int64]{Root: filepath.Join(tmp, "platform"), Codec: dirlife.IntCodec[int64]{Prefix: "gen-"}, DeferRemoval: true}
	for gen := int64(1); gen <= 3; gen++ {
		if _, err := modules.Write(gen, dirlife.Files{"platform.cue": nil}); err != nil {
			log.Fatal(err)
		}
	}
	if err := modules.Prune(3); err != nil {
		log.Fatal(err)
	}
	if err := modules.Settle(context.Background()); err != nil {
		log.Fatal(err)
	}
	entries, _ := os.ReadDir(modules.Root)
	for _, e := range entries {
		fmt.Println(e.Name())
	}
	// Output: gen-3
}

// A build step writes an artifact straight into the staging directory,
// with an executable and a link; an identical rebuild publishes nothing.
func ExampleLayout_WriteStream() {
	tmp, err := os.MkdirTemp("", "dirlife-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	bundles := dirlife.Layout[int64]{Root: filepath.Join(tmp, "bundles"), Codec: dirlife.IntCodec[int64]{Prefix: "v"}}

	build := func(ctx context.Context, dir *os.Root) error {
		if err := dir.Mkdir("bin", 0o755); err != nil {
			return err
		}
		if err := dir.WriteFile("bin/run", []byte("#!/bin/sh\necho run\n"), 0o755); err != nil {
			return err
		}
		return dir.Symlink("bin/run", "start")
	}
	w, err := bundles.WriteStream(context.Background(), 1, build, dirlife.StreamOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fi, _ := os.Stat(filepath.Join(w.Dir, "start"))
	fmt.Println("published:", w.Published, "executable:", fi.Mode()&0o100 != 0)

	copied, err := bundles.CopyFS(context.Background(), 2, fstest.MapFS{
		"bin/run": {Data: []byte("#!/bin/sh\necho run\n"), Mode: 0o755},
		"start":   {Data: []byte("bin/run"), Mode: fs.ModeSymlink},
	}, dirlife.StreamOptions{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("a copy has its digest:", copied.Digest == w.Digest)

	again, err := bundles.WriteStream(context.Background(), 1, build, dirlife.StreamOptions{Current: w.Digest})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("rebuilt, published:", again.Published)
	// Output:
	// published: true executable: true
	// a copy has its digest: true
	// rebuilt, published: false
}
