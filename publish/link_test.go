package publish_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"leasekit.dev/dirlife"
	"leasekit.dev/publish"
)

// Under LinkUnchanged and Adopt, a restarted Publisher links nothing from
// a kept directory before a Publish has claimed it (verified it): neither
// from an intact one that another content shares a file with, nor from a
// corrupted one whose claim failed. Once claimed, it links from it.
func TestLinkOnlyFromVerifiedAfterRestart(t *testing.T) {
	if !digestRecords(t) {
		t.Skip("the temporary directory's filesystem holds no extended attributes")
	}
	ctx := context.Background()
	one := dirlife.Files{"a": []byte("one"), "shared": []byte("same")}
	two := dirlife.Files{"b": []byte("two"), "shared": []byte("same")}
	// restarted publishes one at key 1, ends that process, lets prepare
	// change what it left, and boots a new Publisher on the same Root.
	restarted := func(t *testing.T, prepare func(dir string)) (*testPublisher, *publish.PublishEvent[int64]) {
		root := filepath.Join(t.TempDir(), "root")
		last := new(publish.PublishEvent[int64])
		opts := publish.Options[int64, dirlife.Digest, int]{Adopt: true, LinkUnchanged: true, NoSync: true,
			OnPublish: func(ev publish.PublishEvent[int64]) { *last = ev }}
		rec, err := newPublisher(t, root, opts).Publish(ctx, 1, one, 0)
		if err != nil {
			t.Fatal(err)
		}
		prepare(rec.Dir)
		return newPublisher(t, root, opts), last
	}
	t.Run("unclaimed", func(t *testing.T) {
		p, last := restarted(t, func(string) {})
		if _, err := p.PublishFS(ctx, 2, mapFS(two), 0); err != nil {
			t.Fatal(err)
		}
		if last.Linked != 0 || last.Wrote != last.Bytes {
			t.Fatalf("beside an unclaimed kept directory: %+v, want nothing linked", *last)
		}
	})
	t.Run("corrupted", func(t *testing.T) {
		p, last := restarted(t, func(dir string) {
			f := filepath.Join(dir, "a")
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(f, []byte("torn"), 0o444); err != nil {
				t.Fatal(err)
			}
		})
		if _, err := p.Publish(ctx, 1, one, 0); err != nil {
			t.Fatal(err)
		}
		if last.Discarded == nil || last.Linked != 0 || last.Wrote != last.Bytes {
			t.Fatalf("claiming a corrupted kept directory: %+v, want it discarded and nothing linked", *last)
		}
	})
	t.Run("claimed", func(t *testing.T) {
		p, last := restarted(t, func(string) {})
		if _, err := p.Publish(ctx, 1, one, 0); err != nil {
			t.Fatal(err)
		}
		if p.Stats().Adopted != 1 {
			t.Fatalf("Stats %+v, want the kept directory adopted", p.Stats())
		}
		l, _ := p.Slot().Lease() // gen-1 stays, for its link count
		defer l.Release()
		rec, err := p.PublishFS(ctx, 2, mapFS(two), 0)
		if err != nil {
			t.Fatal(err)
		}
		if last.Linked != 1 || last.Wrote != int64(len("two")) || last.Bytes != int64(len("twosame")) {
			t.Fatalf("beside a claimed directory: %+v, want its shared file linked", *last)
		}
		fi, err := os.Lstat(filepath.Join(rec.Dir, "shared"))
		if err != nil || linkCount(fi) < 2 || fi.Mode() != 0o444 {
			t.Fatalf("shared: %v, %v", fi, err)
		}
	})
}

// Without LinkUnchanged, directories share no inode: the same files
// published at several keys are written, each its own, writable by the
// owner as Publish always wrote them.
func TestNoLinkWithoutLinkUnchanged(t *testing.T) {
	ctx := context.Background()
	p := newPublisher(t, filepath.Join(t.TempDir(), "root"), publish.Options[int64, dirlife.Digest, int]{NoSync: true})
	files := dirlife.Files{"a": []byte("same")}
	var leases []func()
	for key := int64(1); key <= 3; key++ {
		if _, err := p.Publish(ctx, key, files, 0); err != nil {
			t.Fatal(err)
		}
		l, _ := p.Slot().Lease()
		leases = append(leases, l.Release)
		fi, err := os.Lstat(filepath.Join(l.Value().Dir, "a"))
		if err != nil || linkCount(fi) != 1 || fi.Mode()&0o200 == 0 {
			t.Fatalf("key %d: %v, %v: want one link, writable", key, fi, err)
		}
	}
	if st := p.Stats(); st.FilesLinked != 0 || st.BytesWritten != st.BytesPublished || st.BytesPublished != 3*4 {
		t.Fatalf("Stats %+v: want every byte written", st)
	}
	for _, release := range leases {
		release()
	}
}
