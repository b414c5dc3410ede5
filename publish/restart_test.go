package publish_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
)

// publishVia publishes files at key through Publish or, viaFS, PublishFS.
func publishVia(ctx context.Context, p *testPublisher, viaFS bool, key int64, files dirlife.Files) (publish.Record[int64, dirlife.Digest, int], error) {
	if viaFS {
		return p.PublishFS(ctx, key, mapFS(files), 0)
	}
	return p.Publish(ctx, key, files, 0)
}

// way names a way in, for subtests.
func way(viaFS bool) string {
	if viaFS {
		return "PublishFS"
	}
	return "Publish"
}

// flipInPlace changes one byte of the file f where it is, keeping its
// size, inode and modification time: the edit no stat tells.
func flipInPlace(t fataler, f string) {
	t.Helper()
	fi, err := os.Stat(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x20
	if err := os.Chmod(f, 0o644); err != nil { // LinkUnchanged's files are read-only
		t.Fatal(err)
	}
	w, err := os.OpenFile(f, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteAt(data, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(f, fi.Mode()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(f, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
}

// TestAdoptServesOnlyTheVerifiedCopy: PublishFS rewrites a content beside
// a leased copy of itself, so a Root holds two directories of one key and
// digest. After a restart, with one of them edited in place (its recorded
// digest, size and mtime left as they were), the Publish of that content,
// either way in, serves the copy it verified, never the other: it
// verifies them in name order, discards an edited one and serves the
// first intact one, and the other goes unread with the first record set.
// Repeated, so that no order of a map decides a run.
func TestAdoptServesOnlyTheVerifiedCopy(t *testing.T) {
	if !digestRecords(t) {
		t.Skip("the temporary directory's filesystem holds no extended attributes")
	}
	ctx := context.Background()
	a := dirlife.Files{"data/blob": []byte("the published bytes of a"), "MANIFEST": []byte("a")}
	b := dirlife.Files{"data/blob": []byte("the published bytes of b"), "MANIFEST": []byte("b")}
	for _, viaFS := range []bool{false, true} {
		for edited := range 2 {
			t.Run(fmt.Sprintf("%s/edited=%d", way(viaFS), edited), func(t *testing.T) {
				for range 8 {
					root := filepath.Join(t.TempDir(), "root")
					opts := publish.Options[int64, dirlife.Digest, int]{Adopt: true, NoSync: true}
					first := newPublisher(t, root, opts)
					for i, files := range []dirlife.Files{a, b, a} {
						if _, err := first.PublishFS(ctx, 1, mapFS(files), 0); err != nil {
							t.Fatal(err)
						}
						if i == 0 {
							l, _ := first.Slot().Lease() // a's first copy stays
							defer l.Release()
						}
					}
					if err := first.Settle(ctx); err != nil {
						t.Fatal(err)
					}
					copies := onDisk(t, root)
					if len(copies) != 2 {
						t.Fatalf("before the restart, Root holds %v, want two copies of a", copies)
					}
					flipInPlace(t, filepath.Join(root, copies[edited], "data", "blob"))

					var last publish.PublishEvent[int64]
					opts.OnPublish = func(ev publish.PublishEvent[int64]) { last = ev }
					second := newPublisher(t, root, opts)
					rec, err := publishVia(ctx, second, viaFS, 1, a)
					if err != nil {
						t.Fatal(err)
					}
					got, err := readTree(rec.Dir)
					if err != nil {
						t.Fatal(err)
					}
					if !sameContent(got, a) {
						t.Fatalf("%s served %s, which holds %q, not the published bytes", way(viaFS), rec.Dir, got["data/blob"])
					}
					intact := copies[1-edited]
					st := second.Stats()
					wantDiscarded := uint64(1 - edited) // the edited one is read only when it comes first
					if filepath.Base(rec.Dir) != intact || st.Adopted != 1 || st.Discarded != wantDiscarded || (last.Discarded != nil) != (wantDiscarded == 1) {
						t.Fatalf("%s served %s (Adopted %d, Discarded %d, %v), want the intact kept %s", way(viaFS), rec.Dir, st.Adopted, st.Discarded, last.Discarded, intact)
					}
					if err := second.Settle(ctx); err != nil {
						t.Fatal(err)
					}
					if left := onDisk(t, root); !slices.Equal(left, []string{intact}) {
						t.Fatalf("after the publish, Root holds %v, want only %s", left, intact)
					}
				}
			})
		}
	}
}

// TestAdoptRestartWritesNothing: under Adopt, a content published through
// either way in, then published again after a restart through either way
// in, is served from the directory the first process wrote (os.SameFile),
// and no directory of the second publish's own is left on disk. Publish
// knows the digest before it writes and writes nothing; PublishFS knows it
// once its copy is staged, and discards the copy.
func TestAdoptRestartWritesNothing(t *testing.T) {
	if !digestRecords(t) {
		t.Skip("the temporary directory's filesystem holds no extended attributes")
	}
	ctx := context.Background()
	files := dirlife.Files{"bin/tool": []byte("#!/bin/sh\n"), "conf": []byte("x=1\n")}
	for _, firstFS := range []bool{false, true} {
		for _, secondFS := range []bool{false, true} {
			for _, link := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/then-%s/link=%v", way(firstFS), way(secondFS), link), func(t *testing.T) {
					root := filepath.Join(t.TempDir(), "root")
					opts := publish.Options[int64, dirlife.Digest, int]{Adopt: true, LinkUnchanged: link}
					rec, err := publishVia(ctx, newPublisher(t, root, opts), firstFS, 1, files)
					if err != nil {
						t.Fatal(err)
					}
					before, err := os.Stat(rec.Dir)
					if err != nil {
						t.Fatal(err)
					}
					inodesBefore := inodes(t, rec.Dir)

					second := newPublisher(t, root, opts)
					again, err := publishVia(ctx, second, secondFS, 1, files)
					if err != nil {
						t.Fatal(err)
					}
					after, err := os.Stat(again.Dir)
					if err != nil {
						t.Fatal(err)
					}
					if !os.SameFile(before, after) || again.Digest != rec.Digest {
						t.Fatalf("after the restart, %s served %s (%v), want the adopted %s (%v)", way(secondFS), again.Dir, again.Digest, rec.Dir, rec.Digest)
					}
					if st := second.Stats(); st.Adopted != 1 || st.Discarded != 0 {
						t.Fatalf("Adopted %d, Discarded %d, want the kept directory claimed", st.Adopted, st.Discarded)
					}
					if err := second.Settle(ctx); err != nil {
						t.Fatal(err)
					}
					if got := onDisk(t, root); !slices.Equal(got, []string{filepath.Base(rec.Dir)}) {
						t.Fatalf("after the restart's publish, Root holds %v, want only the adopted %s", got, filepath.Base(rec.Dir))
					}
					if got := inodes(t, again.Dir); !maps.Equal(got, inodesBefore) {
						t.Fatalf("the adopted directory's files were replaced: inodes %v, then %v", inodesBefore, got)
					}
				})
			}
		}
	}
}
