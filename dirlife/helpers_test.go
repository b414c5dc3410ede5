package dirlife

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"leasekit.dev/internal/testkit/dirtree"
)

// tb is what the helpers need of a *testing.T, *testing.B or *rapid.T.
type tb interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
}

func genLayout(t testing.TB) Layout[int64] {
	t.Helper()
	return Layout[int64]{Root: filepath.Join(t.TempDir(), "root"), Codec: IntCodec[int64]{Prefix: "gen-"}}
}

// readTree returns the regular files under dir as Files, and fails on
// anything else (a symbolic link, a device).
func readTree(t tb, dir string) Files {
	t.Helper()
	files, err := dirtree.Read(dir)
	if err != nil {
		t.Fatalf("reading %s: %v", dir, err)
	}
	return files
}

func sameFiles(a, b Files) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !bytes.Equal(v, w) {
			return false
		}
	}
	return true
}

// rootEntries lists the names in root, sorted.
func rootEntries(t tb, root string) []string {
	t.Helper()
	return dirtree.MustNames(t, root)
}

// settle waits for l's background removals and fails on their errors.
func settle(t tb, l Layout[int64]) {
	t.Helper()
	if err := l.Settle(context.Background()); err != nil {
		t.Fatalf("Settle: %v", err)
	}
}

// leftovers lists the staging and moved-aside entries in root.
func leftovers(t tb, root string) []string {
	t.Helper()
	var out []string
	for _, n := range rootEntries(t, root) {
		if strings.HasPrefix(n, stagePrefix) || strings.HasPrefix(n, asidePrefix) {
			out = append(out, n)
		}
	}
	return out
}

// mustWrite writes files as id and returns the directory.
func mustWrite(t tb, l Layout[int64], id int64, files Files) string {
	t.Helper()
	dir, err := l.Write(id, files)
	if err != nil {
		t.Fatalf("Write(%d): %v", id, err)
	}
	return dir
}

// writeDigested writes files as id, and returns the directory and the
// Digest DigestFiles gives files.
func writeDigested(t tb, l Layout[int64], id int64, files Files) (string, Digest) {
	t.Helper()
	dir := mustWrite(t, l, id, files)
	want, err := l.DigestFiles(files)
	if err != nil {
		t.Fatalf("DigestFiles: %v", err)
	}
	return dir, want
}

// versionFiles is version v of ID id: a manifest naming every file, and a
// number of files that depends on v, so that a partial directory shows.
func versionFiles(id int64, v int) Files {
	files := Files{}
	var names []string
	for i := range 2 + v%9 {
		name := fmt.Sprintf("d%d/f%d", i%3, i)
		files[name] = bytes.Repeat([]byte(fmt.Sprintf("%d/%d/%s;", id, v, name)), 1+i*50)
		names = append(names, name)
	}
	files["MANIFEST"] = []byte(fmt.Sprintf("%d %d %s", id, v, strings.Join(names, ",")))
	return files
}

// digestFiles is the Digest Write gives files under the usual umask, as the
// zero Layout's DigestFiles tells it.
func digestFiles(files Files) (Digest, error) { return Layout[string]{}.DigestFiles(files) }
