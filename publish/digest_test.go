package publish_test

import (
	"context"
	"path/filepath"
	"strconv"
	"testing"
	"testing/fstest"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
	"pgregory.net/rapid"
)

// TestDigestFilesIsTheLayoutsDigest: the identity a Publisher gives files
// is the digest dirlife reports for the same content copied to disk, so a
// publisher fed by a streamed write names the same content the same way;
// and files the layout refuses have no digest.
func TestDigestFilesIsTheLayoutsDigest(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	layout := dirlife.Layout[int64]{Root: root, Codec: genCodec, NoSync: true}
	if err := layout.Reset(); err != nil {
		t.Fatal(err)
	}
	id := int64(0)
	rapid.Check(t, func(t *rapid.T) {
		files := dirlife.Files{}
		fsys := fstest.MapFS{}
		for i := range rapid.IntRange(1, 5).Draw(t, "files") {
			name := rapid.SampledFrom([]string{"a", "b.cue", "sub/c", "sub/deeper/d", "e" + strconv.Itoa(i)}).Draw(t, "name")
			if _, ok := fsys[name]; ok || hasPrefixDir(fsys, name) {
				continue
			}
			data := rapid.SliceOfN(rapid.Byte(), 0, 64).Draw(t, "data")
			files[name] = data
			fsys[name] = &fstest.MapFile{Data: data, Mode: 0o644}
		}
		want, err := dirlife.Layout[string]{}.DigestFiles(files)
		if err != nil {
			t.Skip(err) // a file where another needs a directory
		}
		if got := publish.DigestFiles(files); got != want {
			t.Fatalf("DigestFiles %v, dirlife's %v", got, want)
		}
		id++
		w, err := layout.CopyFS(context.Background(), id, fsys, dirlife.StreamOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if w.Digest != want {
			t.Fatalf("CopyFS reports %v, DigestFiles %v", w.Digest, want)
		}
	})
	if d := publish.DigestFiles(dirlife.Files{"../out": nil}); !d.IsZero() {
		t.Fatalf("refused files have digest %v", d)
	}
}

// hasPrefixDir reports whether name is a directory of a file in fsys, or
// a file in fsys is a directory of name.
func hasPrefixDir(fsys fstest.MapFS, name string) bool {
	for other := range fsys {
		if len(other) > len(name) && other[:len(name)+1] == name+"/" ||
			len(name) > len(other) && name[:len(other)+1] == other+"/" {
			return true
		}
	}
	return false
}
