package publish_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing/fstest"

	"leasekit.dev/dirlife"
	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/publish"
)

var genCodec = dirlife.IntCodec[int64]{Prefix: "gen-"}

// errBad is what the test build step returns for a file set holding a file
// named "bad".
var errBad = errors.New("the bundle holds a file named bad")

// readTree returns the files under dir, by slash-separated path, a link
// read as the file it names.
func readTree(dir string) (dirlife.Files, error) {
	files := dirlife.Files{}
	err := dirtree.Walk(dir, func(rel string, fi fs.FileInfo) error {
		if fi.IsDir() {
			return nil
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
		files[rel] = data
		return err
	})
	return files, err
}

// build is the tests' build step: it reads the directory back and returns
// its digest, refusing a bundle holding "bad".
func build(_ context.Context, dir string) (dirlife.Digest, error) {
	files, err := readTree(dir)
	if err != nil {
		return dirlife.Digest{}, err
	}
	if _, bad := files["bad"]; bad {
		return dirlife.Digest{}, errBad
	}
	return publish.DigestFiles(files), nil
}

type testPublisher = publish.Publisher[int64, dirlife.Digest, int]

// fataler is what the helpers need of a *testing.T or a *rapid.T.
type fataler interface {
	Helper()
	Fatal(args ...any)
}

func newPublisher(t fataler, root string, opts publish.Options[int64, dirlife.Digest, int]) *testPublisher {
	t.Helper()
	p := publish.New(root, genCodec, build, opts)
	if err := p.Boot(); err != nil {
		t.Fatal(err)
	}
	return p
}

// onDisk returns the names of the directories under root, sorted; dot
// entries (the layout's own) are left out.
func onDisk(t fataler, root string) []string {
	t.Helper()
	return slices.DeleteFunc(rootEntries(t, root), func(n string) bool { return strings.HasPrefix(n, ".") })
}

// rootEntries lists every name in root, sorted, the layout's own dot
// entries (staging and aside) included.
func rootEntries(t fataler, root string) []string {
	t.Helper()
	return dirtree.MustNames(t, root)
}

// mapFS returns files as an in-memory tree: each file 0o644, as Publish
// writes them under the usual umask.
func mapFS(files dirlife.Files) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys[name] = &fstest.MapFile{Data: data, Mode: 0o644}
	}
	return fsys
}

// treeHash returns a SHA-256 of the tree under dir: every entry's path,
// mode, and a file's bytes or a link's target.
func treeHash(t fataler, dir string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(h, "%q %v\n", filepath.ToSlash(rel), info.Mode())
		switch {
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "%d %x\n", len(data), sha256.Sum256(data))
		case info.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(h, "-> %q\n", target)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}
