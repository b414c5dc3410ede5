//go:build unix

package publish_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
)

// Under LinkUnchanged, a published file rewritten in place with its
// modification time put back (as cp -p or rsync -t leave it) is not
// linked into the next publish of the original content: the new record's
// directory holds the published bytes, which its digest names, through
// Publish and PublishFS alike.
func TestLinkUnchangedSkipsAFileRewrittenWithItsMtime(t *testing.T) {
	ctx := context.Background()
	files := dirlife.Files{"f": []byte("published content"), "g": []byte("unchanged")}
	for _, fs := range []bool{false, true} {
		name := "Publish"
		if fs {
			name = "PublishFS"
		}
		t.Run(name, func(t *testing.T) {
			p := newPublisher(t, filepath.Join(t.TempDir(), "root"), publish.Options[int64, dirlife.Digest, int]{LinkUnchanged: true, NoSync: true})
			put := func(key int64) publish.Record[int64, dirlife.Digest, int] {
				t.Helper()
				var rec publish.Record[int64, dirlife.Digest, int]
				var err error
				if fs {
					rec, err = p.PublishFS(ctx, key, mapFS(files), 0)
				} else {
					rec, err = p.Publish(ctx, key, files, 0)
				}
				if err != nil {
					t.Fatal(err)
				}
				return rec
			}
			one := put(1)
			l, _ := p.Slot().Lease() // key 1 stays on disk, as a reader's
			defer l.Release()
			f := filepath.Join(one.Dir, "f")
			fi, err := os.Lstat(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(f, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte("REWRITTEN content"), 0); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(f, fi.Mode()); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(f, fi.ModTime(), fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			two := put(2)
			got, err := readTree(two.Dir)
			if err != nil {
				t.Fatal(err)
			}
			if string(got["f"]) != string(files["f"]) || string(got["g"]) != string(files["g"]) {
				t.Fatalf("key 2 serves %q, published %q", got, files)
			}
			if two.Digest != one.Digest {
				t.Fatalf("key 2's digest %v, key 1's %v: the same content", two.Digest, one.Digest)
			}
			g1, err := os.Lstat(filepath.Join(one.Dir, "g"))
			if err != nil {
				t.Fatal(err)
			}
			g2, err := os.Lstat(filepath.Join(two.Dir, "g"))
			if err != nil {
				t.Fatal(err)
			}
			if !os.SameFile(g1, g2) {
				t.Fatal("the unchanged file was written, not linked")
			}
		})
	}
}
