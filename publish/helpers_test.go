package publish_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
)

var genCodec = dirlife.IntCodec[int64]{Prefix: "gen-"}

// errBad is what the test build step returns for a file set holding a file
// named "bad".
var errBad = errors.New("the bundle holds a file named bad")

// readTree returns the regular files under dir, by slash-separated path.
func readTree(dir string) (dirlife.Files, error) {
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
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names
}

func osMkdirTemp() (string, error) { return os.MkdirTemp("", "publish-model-") }
func osRemoveAll(dir string)       { os.RemoveAll(dir) }
