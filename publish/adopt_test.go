package publish_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"

	"leasekit.dev/dirlife"
	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/publish"
	"pgregory.net/rapid"
)

// corruptions are the accidents TestAdoptDetectsCorruption makes to a kept
// directory between two processes; "none" makes none.
var corruptions = []string{"none", "flip", "truncate", "add", "remove", "rename", "mode", "setuid", "sticky"}

// TestAdoptDetectsCorruption publishes a random tree with one Publisher
// under Adopt, drops it as a process that ends, makes one random accident
// to the directory it left, and boots a second Publisher on the same Root:
// Boot keeps the directory, and the Publish of the same content claims it
// without writing when it is intact, and otherwise detects the accident,
// reports it, and serves the files afresh.
func TestAdoptDetectsCorruption(t *testing.T) {
	if !digestRecords(t) {
		t.Skip("the temporary directory's filesystem holds no extended attributes")
	}
	rapid.Check(t, func(t *rapid.T) {
		ctx := context.Background()
		root := filepath.Join(tempDir(t), "root")
		files := drawTree(t)
		opts := publish.Options[int64, dirlife.Digest, int]{Adopt: true, NoSync: rapid.Bool().Draw(t, "nosync")}
		first := newPublisher(t, root, opts)
		rec, err := first.Publish(ctx, 7, maps.Clone(files), 0)
		if err != nil {
			t.Fatal(err)
		}
		if err := first.Settle(ctx); err != nil {
			t.Fatal(err)
		}
		dir := rec.Dir
		kind := rapid.SampledFrom(corruptions).Draw(t, "corruption")
		corrupt(t, dir, files, kind)
		before := inodes(t, dir)

		var events []publish.PublishEvent[int64]
		opts.OnPublish = func(ev publish.PublishEvent[int64]) { events = append(events, ev) }
		second := newPublisher(t, root, opts)
		if st := second.Stats(); st.Kept != 1 || st.Held || st.NoDigestRecords {
			t.Fatalf("after Boot: Stats %+v, want one directory kept and no record", st)
		}
		rec, err = second.Publish(ctx, 7, maps.Clone(files), 0)
		if err != nil {
			t.Fatal(err)
		}
		checkDir(t, "the published directory", rec.Dir, files)
		st := second.Stats()
		ev := events[len(events)-1]
		if kind == "none" {
			if st.Adopted != 1 || st.Discarded != 0 || ev.Discarded != nil {
				t.Fatalf("intact kept directory: Adopted %d, Discarded %d (%v), want it claimed", st.Adopted, st.Discarded, ev.Discarded)
			}
			if after := inodes(t, rec.Dir); !maps.Equal(before, after) {
				t.Fatalf("an intact kept directory was written again: inodes %v, then %v", before, after)
			}
			return
		}
		if st.Adopted != 0 || st.Discarded != 1 || ev.Discarded == nil {
			t.Fatalf("%s: Adopted %d, Discarded %d, event %v: the accident went unseen", kind, st.Adopted, st.Discarded, ev.Discarded)
		}
		_, refused := errors.AsType[*dirlife.NameError](ev.Discarded)
		if !errors.Is(ev.Discarded, dirlife.ErrDigestMismatch) && !refused {
			t.Fatalf("%s: Discarded %v, want a digest mismatch or a refused entry", kind, ev.Discarded)
		}
		if got := onDisk(t, root); !slices.Equal(got, []string{filepath.Base(rec.Dir)}) {
			t.Fatalf("Root holds %v, want only %s", got, filepath.Base(rec.Dir))
		}
	})
}

// digestRecords reports whether a Publisher under Adopt records digests
// in the temporary directory's filesystem.
func digestRecords(t *testing.T) bool {
	p := newPublisher(t, filepath.Join(t.TempDir(), "root"), publish.Options[int64, dirlife.Digest, int]{Adopt: true, NoSync: true})
	return !p.Stats().NoDigestRecords
}

// drawTree draws one to six files of one to 64 bytes, some in
// subdirectories.
func drawTree(t *rapid.T) dirlife.Files {
	names := rapid.SliceOfNDistinct(rapid.SampledFrom([]string{"a", "b", "c.txt", "sub/a", "sub/d", "sub/deep/e", "x/y"}), 1, 6, rapid.ID).Draw(t, "names")
	files := dirlife.Files{}
	for _, n := range names {
		files[n] = rapid.SliceOfN(rapid.Byte(), 1, 64).Draw(t, "bytes of "+n)
	}
	return files
}

// corrupt makes the accident kind to dir, which holds files.
func corrupt(t *rapid.T, dir string, files dirlife.Files, kind string) {
	names := slices.Sorted(maps.Keys(files))
	name := rapid.SampledFrom(names).Draw(t, "file")
	full := filepath.Join(dir, filepath.FromSlash(name))
	var err error
	switch kind {
	case "none":
	case "flip":
		data := slices.Clone(files[name])
		i := rapid.IntRange(0, len(data)-1).Draw(t, "byte")
		data[i] ^= 1 << rapid.IntRange(0, 7).Draw(t, "bit")
		err = os.WriteFile(full, data, 0)
	case "truncate":
		err = os.Truncate(full, int64(rapid.IntRange(0, len(files[name])-1).Draw(t, "size")))
	case "add":
		err = os.WriteFile(filepath.Join(filepath.Dir(full), "added"), []byte("x"), 0o644)
	case "remove":
		err = os.Remove(full)
	case "rename":
		err = os.Rename(full, filepath.Join(filepath.Dir(full), path.Base(name)+"-renamed"))
	case "mode":
		err = os.Chmod(full, rapid.SampledFrom([]fs.FileMode{0o600, 0o640, 0o664, 0o755, 0o444}).Draw(t, "mode"))
	case "setuid":
		err = os.Chmod(full, 0o644|fs.ModeSetuid)
	case "sticky":
		err = os.Chmod(filepath.Dir(full), 0o755|fs.ModeSticky)
	default:
		err = fmt.Errorf("no corruption %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// inodes returns the inode of every entry under dir, by path.
func inodes(t fataler, dir string) map[string]uint64 {
	t.Helper()
	out := map[string]uint64{}
	err := dirtree.Walk(dir, func(rel string, fi fs.FileInfo) error {
		out[rel] = inodeOf(fi)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestAdoptKeptAwaitClaim: the directories Boot kept stay through removal
// passes until a record is set, and then those no Publish claimed go,
// unverified; Forget lets them go too.
func TestAdoptKeptAwaitClaim(t *testing.T) {
	if !digestRecords(t) {
		t.Skip("the temporary directory's filesystem holds no extended attributes")
	}
	ctx := context.Background()
	root := filepath.Join(t.TempDir(), "root")
	opts := publish.Options[int64, dirlife.Digest, int]{Adopt: true, NoSync: true}
	first := newPublisher(t, root, opts)
	one, two := dirlife.Files{"f": []byte("one")}, dirlife.Files{"f": []byte("two")}
	for i, files := range []dirlife.Files{one, two} {
		if _, err := first.Publish(ctx, int64(i+1), files, 0); err != nil {
			t.Fatal(err)
		}
		lease, _ := first.Slot().Lease() // held across the next Publish: both stay
		defer lease.Release()
	}
	if err := first.Settle(ctx); err != nil {
		t.Fatal(err)
	}
	if got := onDisk(t, root); !slices.Equal(got, []string{"gen-1", "gen-2"}) {
		t.Fatalf("before the restart, Root holds %v", got)
	}

	second := newPublisher(t, root, opts)
	if _, _, held := second.Slot().Get(); held {
		t.Fatal("a record is current after Boot")
	}
	for _, ev := range second.Reclaim() {
		t.Fatalf("a removal pass before any claim removed %v (%v)", ev.Dir, ev.Err)
	}
	if got := onDisk(t, root); !slices.Equal(got, []string{"gen-1", "gen-2"}) {
		t.Fatalf("after a removal pass, Root holds %v, want both kept", got)
	}
	// The unclaimed gen-1 is corrupted: it goes unverified all the same.
	if err := os.WriteFile(filepath.Join(root, "gen-1", "f"), []byte("torn"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec, err := second.Publish(ctx, 2, two, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st := second.Stats(); filepath.Base(rec.Dir) != "gen-2" || st.Adopted != 1 || st.Discarded != 0 {
		t.Fatalf("Publish(2) = %s, Stats %+v: want gen-2 claimed", rec.Dir, st)
	}
	if got := onDisk(t, root); !slices.Equal(got, []string{"gen-2"}) {
		t.Fatalf("after the first record was set, Root holds %v, want only gen-2", got)
	}

	third := newPublisher(t, root, opts)
	third.Forget()
	if got := onDisk(t, root); len(got) != 0 {
		t.Fatalf("after Forget, Root holds %v, want nothing", got)
	}
}

// TestBootAdoptKeepsOnlyRecorded: Boot under Adopt keeps exactly the
// directories a write completed (those carrying a recorded digest) and
// removes, before it returns, what no complete write left: a directory of
// a key's name made by hand, a staging leftover, a stray file.
func TestBootAdoptKeepsOnlyRecorded(t *testing.T) {
	root, opts := publishedOne(t)
	for _, err := range []error{
		os.Mkdir(filepath.Join(root, "gen-2"), 0o755),
		os.WriteFile(filepath.Join(root, "gen-2", "f"), []byte("by hand"), 0o644),
		os.Mkdir(filepath.Join(root, ".stage-0123456789abcdef"), 0o755),
		os.WriteFile(filepath.Join(root, "stray"), nil, 0o644),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}

	second := newPublisher(t, root, opts)
	if got := onDisk(t, root); !slices.Equal(got, []string{"gen-1"}) {
		t.Fatalf("after Boot under Adopt, Root holds %v, want only gen-1", got)
	}
	if st := second.Stats(); st.Kept != 1 || st.NoDigestRecords {
		t.Fatalf("Stats after Boot: Kept %d, NoDigestRecords %v; want 1 kept", st.Kept, st.NoDigestRecords)
	}
	if got := rootEntries(t, root); slices.Contains(got, ".stage-0123456789abcdef") {
		t.Fatalf("after Boot under Adopt, the staging leftover is still there: Root holds %v", got)
	}
}

// TestBootAdoptOpensRootAsReset: Boot under Adopt creates a missing Root,
// and refuses a root another owner's files fill, touching nothing and
// leaving the Publisher unbooted, as Boot without Adopt does.
func TestBootAdoptOpensRootAsReset(t *testing.T) {
	for _, adopt := range []bool{false, true} {
		opts := publish.Options[int64, dirlife.Digest, int]{Adopt: adopt, NoSync: true}
		root := filepath.Join(t.TempDir(), "a", "root")
		newPublisher(t, root, opts)
		if got := onDisk(t, root); len(got) != 0 {
			t.Fatalf("adopt %v: Boot of a missing Root left %v", adopt, got)
		}
		foreign := t.TempDir()
		os.WriteFile(filepath.Join(foreign, "theirs"), []byte("x"), 0o644)
		p := publish.New(foreign, genCodec, build, opts)
		if err := p.Boot(); !errors.Is(err, dirlife.ErrNotOwned) || p.Booted() {
			t.Fatalf("adopt %v: Boot of a foreign root = %v, booted %v; want ErrNotOwned, unbooted", adopt, err, p.Booted())
		}
		if got := onDisk(t, foreign); !slices.Equal(got, []string{"theirs"}) {
			t.Fatalf("adopt %v: a refused Boot left %v", adopt, got)
		}
	}
}

// TestBootAdoptWaitsForRemoval: Boot under Adopt, which keeps a recorded
// directory, returns once what it empties is gone, as Boot without Adopt
// does: Root holds the kept directory and nothing else, no entry set aside
// for a removal still running either.
func TestBootAdoptWaitsForRemoval(t *testing.T) {
	root, opts := publishedOne(t)
	garbage := filepath.Join(root, "gen-2") // by hand: no digest recorded
	for i := range 64 {
		sub := filepath.Join(garbage, fmt.Sprint(i))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			t.Fatal(err)
		}
		for j := range 32 {
			if err := os.WriteFile(filepath.Join(sub, fmt.Sprint(j)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	newPublisher(t, root, opts)
	if names := rootEntries(t, root); !slices.Equal(names, []string{"gen-1"}) {
		t.Fatalf("once Boot under Adopt returned, Root holds %v, want only gen-1", names)
	}
}

// publishedOne returns a Root where a Publisher under Adopt published ID
// 1, and the options it ran with; it skips t where no digest is recorded.
func publishedOne(t *testing.T) (root string, opts publish.Options[int64, dirlife.Digest, int]) {
	t.Helper()
	if !digestRecords(t) {
		t.Skip("the temporary directory's filesystem holds no extended attributes")
	}
	root = filepath.Join(t.TempDir(), "root")
	opts = publish.Options[int64, dirlife.Digest, int]{Adopt: true, NoSync: true}
	first := newPublisher(t, root, opts)
	if _, err := first.Publish(context.Background(), 1, dirlife.Files{"f": []byte("one")}, 0); err != nil {
		t.Fatal(err)
	}
	return root, opts
}

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
	data, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0x20
	dirtree.Overwrite(t, f, data) // LinkUnchanged's files are read-only
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
					if !maps.EqualFunc(got, a, bytes.Equal) {
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
