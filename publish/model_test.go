package publish_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"leasekit.dev/dirlife"
	"leasekit.dev/internal/testkit/dirtree"
	"leasekit.dev/publish"
	"leasekit.dev/slot"
	"pgregory.net/rapid"
)

// contents are the file sets the model test draws: a few repeat, so that
// identical re-publishes and returns to an earlier content happen; "bad"
// fails the build.
var contents = []dirlife.Files{
	{"a.txt": []byte("one")},
	{"a.txt": []byte("two")},
	{"a.txt": []byte("one"), "sub/b.txt": []byte("x")},
	{"a.txt": []byte("two"), "sub/b.txt": []byte("x")},
	{"bad": []byte("refused")},
}

type modelLease struct {
	l     *slot.Lease[int64, publish.Record[int64, dirlife.Digest, int]]
	files dirlife.Files // what its directory held when it was leased
	hash  string        // of its directory's tree (names, modes, bytes) at the lease
}

// TestPublisherModel drives a Publisher with random publishes (same-key
// changes, stale keys, failed builds, identical re-publishes, value
// changes), each through Publish or PublishFS, forgets, boots, leases
// held across many publishes, releases and reclaims, and checks after
// every step against a plain model: no leased directory is removed or
// changed (its tree hashed at the lease and at the release), the slot
// never names a missing or partial directory, an identical re-publish
// keeps the current directory whichever way either arrived, Root holds
// exactly the current and leased directories once removals ran, and names
// are gen-<n> or gen-<n>-<hex digest prefix> (random hex for a tree).
//
// Under Adopt (drawn), a restart keeps every directory on disk, a kept
// directory may be corrupted before it is claimed, the Publish (or
// PublishFS) that claims a content verifies its kept directories in name
// order, serves the first intact one without keeping a copy of its own,
// writes afresh when none is, and the unclaimed ones go with the first
// record set or Forget.
//
// Under LinkUnchanged (drawn), every file is read-only, and a Publish
// that writes a directory links exactly the files whose bytes a directory
// on disk that this process wrote or verified holds: never one of a kept
// directory not yet claimed. Without it, no file has a second link. Either
// way a directory never changes while it is on disk, so removing one
// changes no other.
func TestPublisherModel(t *testing.T) {
	records := digestRecords(t)
	rapid.Check(t, func(t *rapid.T) {
		root := filepath.Join(tempDir(t), "root")
		var last publish.PublishEvent[int64]
		opts := publish.Options[int64, dirlife.Digest, int]{NoSync: true, Adopt: records && rapid.Bool().Draw(t, "adopt"),
			LinkUnchanged: rapid.Bool().Draw(t, "linkUnchanged"),
			OnPublish:     func(ev publish.PublishEvent[int64]) { last = ev }}
		digestOf := publish.DigestFiles
		if opts.LinkUnchanged {
			digestOf = publish.DigestLinked
		}
		p := newPublisher(t, root, opts)
		ctx := context.Background()
		var (
			held     bool
			curKey   int64
			curFiles dirlife.Files
			curValue int
			leases   []modelLease
			pruned   = true // no release since the last removal pass
			// The directories PublishFS wrote, which a Publish of the same
			// content may take again.
			streamedDirs = map[string]bool{}
			// Under Adopt, after a restart: the directories Boot kept, by
			// name, with their identity and whether one was corrupted; nil
			// once a record is set or Forget ran.
			kept map[string]keptDir
			// The tree hash of every directory on disk, when first seen.
			hashes = map[string]string{}
		)
		t.Repeat(map[string]func(*rapid.T){
			"Publish": func(t *rapid.T) {
				key := rapid.Int64Range(1, 4).Draw(t, "key")
				files := contents[rapid.IntRange(0, len(contents)-1).Draw(t, "files")]
				value := rapid.IntRange(0, 1).Draw(t, "value")
				viaFS := rapid.Bool().Draw(t, "PublishFS")
				_, before, _ := p.Slot().Get()
				statsBefore := p.Stats()
				// The files a write may link: those of the directories on
				// disk this process wrote or verified.
				linkable := map[string]bool{}
				dirsBefore := onDisk(t, root)
				for _, name := range dirsBefore {
					if _, unverified := kept[name]; unverified {
						continue
					}
					tree, err := readTree(filepath.Join(root, name))
					if err != nil {
						t.Fatal(err)
					}
					for _, data := range tree {
						linkable[string(data)] = true
					}
				}
				last = publish.PublishEvent[int64]{}
				var rec publish.Record[int64, dirlife.Digest, int]
				var err error
				if viaFS {
					rec, err = p.PublishFS(ctx, key, mapFS(files), value)
				} else {
					rec, err = p.Publish(ctx, key, maps.Clone(files), value)
				}
				// The kept directories of the content, which the Publish
				// verifies in name order until one is intact: that one is
				// served, the corrupted ones before it are discarded, and
				// the rest go unread.
				var claims []keptDir
				if !(held && key < curKey) {
					for _, name := range slices.Sorted(maps.Keys(kept)) {
						if k := kept[name]; k.id == (publish.Identity[int64]{Key: key, Digest: digestOf(files)}) {
							claims = append(claims, k)
						}
					}
				}
				var discarded uint64
				var intact *keptDir
				for i, k := range claims {
					if !k.corrupt {
						intact = &claims[i]
						break
					}
					discarded++
				}
				adopted := uint64(0)
				if intact != nil {
					adopted = 1
				}
				after := p.Stats()
				if after.Adopted != statsBefore.Adopted+adopted || after.Discarded != statsBefore.Discarded+discarded {
					t.Fatalf("Publish(%d) over kept %+v: Adopted %d, Discarded %d, want %d, %d", key, claims, after.Adopted, after.Discarded, statsBefore.Adopted+adopted, statsBefore.Discarded+discarded)
				}
				for _, k := range claims {
					delete(kept, k.name) // claimed, or garbage
					if k.corrupt {
						// Discarded: a directory written afresh under its
						// name is a new directory, not a change to one.
						delete(hashes, k.name)
					}
				}
				switch {
				case held && key < curKey:
					if !errors.Is(err, publish.ErrStale) {
						t.Fatalf("Publish(%d) over %d: err %v, want ErrStale", key, curKey, err)
					}
					return
				case files["bad"] != nil:
					if !errors.Is(err, errBad) {
						t.Fatalf("Publish(%d, bad): err %v, want the build's error", key, err)
					}
					return
				case err != nil:
					t.Fatalf("Publish(%d): %v", key, err)
				}
				if rec.Key != key || rec.Value != value || rec.Digest != digestOf(files) || rec.Artifact != publish.DigestFiles(files) {
					t.Fatalf("Publish(%d) = %+v", key, rec)
				}
				if intact != nil && filepath.Base(rec.Dir) != intact.name {
					t.Fatalf("Publish(%d) served %s, want the kept %s, the first intact one", key, rec.Dir, intact.name)
				}
				// A corrupted kept directory is written afresh, perhaps
				// under its own name.
				wrote := !slices.Contains(dirsBefore, filepath.Base(rec.Dir)) || (len(claims) > 0 && intact == nil)
				want := 0
				for _, data := range files {
					if opts.LinkUnchanged && wrote && linkable[string(data)] {
						want++
					}
				}
				if last.Outcome != publish.Unchanged && last.Linked != want {
					t.Fatalf("Publish(%d) linked %d files, want %d (the files a directory this process wrote or verified holds)", key, last.Linked, want)
				}
				identical := held && key == curKey && maps.EqualFunc(files, curFiles, bytes.Equal)
				switch outcome := last.Outcome; {
				case identical && (outcome != publish.Unchanged || rec.Dir != before.Dir):
					t.Fatalf("identical re-publish of %d: outcome %v, directory %s, want Unchanged in %s", key, outcome, rec.Dir, before.Dir)
				case !identical && outcome == publish.Unchanged:
					t.Fatalf("Publish(%d) of new content reported Unchanged", key)
				}
				if viaFS && wrote && last.Outcome != publish.Unchanged {
					streamedDirs[filepath.Base(rec.Dir)] = true
				}
				checkName(t, rec, streamedDirs[filepath.Base(rec.Dir)])
				held, curKey, curFiles, curValue = true, key, files, value
				pruned = true
				kept = nil
			},
			"Forget": func(t *rapid.T) {
				p.Forget()
				held = false
				pruned = true
				kept = nil
			},
			"Corrupt": func(t *rapid.T) {
				if len(kept) == 0 {
					t.Skip("no kept directory")
				}
				name := rapid.SampledFrom(slices.Sorted(maps.Keys(kept))).Draw(t, "kept")
				k := kept[name]
				// A stray edit that replaces the file, as an editor does:
				// a file linked from other directories changes in this
				// one only.
				f := filepath.Join(root, name, "a.txt")
				fi, err := os.Lstat(f)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(f+"~", []byte("torn"), 0o644); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(f+"~", fi.Mode()); err != nil {
					t.Fatal(err)
				}
				if err := os.Rename(f+"~", f); err != nil {
					t.Fatal(err)
				}
				k.corrupt = true
				kept[name] = k
				hashes[name] = treeHash(t, filepath.Join(root, name))
			},
			"Boot": func(t *rapid.T) {
				if err := p.Boot(); err != nil { // idempotent: touches nothing
					t.Fatal(err)
				}
			},
			"Restart": func(t *rapid.T) {
				// The process dies (its leases with it) and a new one boots.
				for _, l := range leases {
					l.l.Release()
				}
				leases = nil
				if err := p.Settle(ctx); err != nil {
					t.Fatal(err)
				}
				was := onDisk(t, root)
				p = newPublisher(t, root, opts)
				held = false
				got := onDisk(t, root)
				if !opts.Adopt {
					if len(got) != 0 {
						t.Fatalf("after Boot, Root holds %v", got)
					}
					return
				}
				// Every directory was complete: Boot kept them all.
				if !slices.Equal(got, was) {
					t.Fatalf("after Boot with Adopt, Root holds %v, want %v", got, was)
				}
				if st := p.Stats(); st.Kept != len(was) || st.Held || st.NoDigestRecords {
					t.Fatalf("after Boot with Adopt: Stats %+v, want %d kept, no record", st, len(was))
				}
				before := kept // kept before, still unclaimed: corrupted ones stay corrupted
				kept = map[string]keptDir{}
				for _, name := range got {
					if k, ok := before[name]; ok {
						kept[name] = k
						continue
					}
					files, err := readTree(filepath.Join(root, name))
					if err != nil {
						t.Fatal(err)
					}
					parts := strings.SplitN(name, "-", 3)
					key, _ := genCodec.Parse(parts[0] + "-" + parts[1])
					kept[name] = keptDir{name: name, id: publish.Identity[int64]{Key: key, Digest: digestOf(files)}}
				}
				pruned = len(kept) == 0
			},
			"Lease": func(t *rapid.T) {
				l, ok := p.Slot().Lease()
				if ok != held {
					t.Fatalf("Lease() ok = %v, want %v", ok, held)
				}
				if ok {
					leases = append(leases, modelLease{l, curFiles, treeHash(t, l.Value().Dir)})
				}
			},
			"Release": func(t *rapid.T) {
				if len(leases) == 0 {
					t.Skip("no lease")
				}
				i := rapid.IntRange(0, len(leases)-1).Draw(t, "lease")
				if got := treeHash(t, leases[i].l.Value().Dir); got != leases[i].hash {
					t.Fatalf("leased directory %s changed between its lease and its release", leases[i].l.Value().Dir)
				}
				leases[i].l.Release()
				leases = slices.Delete(leases, i, i+1)
				pruned = false
			},
			"Reclaim": func(t *rapid.T) {
				for _, ev := range p.Reclaim() {
					if ev.Err != nil {
						t.Fatal(ev.Err)
					}
				}
				pruned = true
			},
			"": func(t *rapid.T) {
				_, cur, ok := p.Slot().Get()
				if ok != held {
					t.Fatalf("Get() ok = %v, want %v", ok, held)
				}
				keep := map[string]bool{}
				if ok {
					if cur.Key != curKey || cur.Value != curValue {
						t.Fatalf("Get() = %+v, want key %d value %d", cur, curKey, curValue)
					}
					checkDir(t, "the current directory", cur.Dir, curFiles)
					keep[filepath.Base(cur.Dir)] = true
				}
				for _, l := range leases {
					checkDir(t, "a leased directory", l.l.Value().Dir, l.files)
					keep[filepath.Base(l.l.Value().Dir)] = true
				}
				got := onDisk(t, root)
				for name := range keep {
					if !slices.Contains(got, name) {
						t.Fatalf("Root holds %v, without %s", got, name)
					}
				}
				for name := range kept {
					keep[name] = true // awaits a claim
				}
				if want := slices.Sorted(maps.Keys(keep)); pruned && !slices.Equal(got, want) {
					t.Fatalf("Root holds %v, want %v (the current and leased directories)", got, want)
				}
				checkShared(t, root, got, opts.LinkUnchanged)
				for name := range hashes {
					if !slices.Contains(got, name) {
						delete(hashes, name)
					}
				}
				for _, name := range got {
					h := treeHash(t, filepath.Join(root, name))
					if was, ok := hashes[name]; ok && h != was {
						t.Fatalf("directory %s changed while on disk", name)
					}
					hashes[name] = h
				}
			},
		})
		for _, l := range leases {
			l.l.Release()
		}
	})
}

// keptDir is a directory Boot kept under Adopt, in the model.
type keptDir struct {
	name    string
	id      publish.Identity[int64]
	corrupt bool // a file was changed after Boot
}

// checkShared fails t unless every file of the directories names under
// root is read-only, under LinkUnchanged, or has no other hard link,
// without it.
func checkShared(t *rapid.T, root string, names []string, linked bool) {
	for _, name := range names {
		err := filepath.WalkDir(filepath.Join(root, name), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			switch n := linkCount(fi); {
			case linked && fi.Mode().Perm()&0o222 != 0:
				t.Fatalf("%s has mode %v under LinkUnchanged", p, fi.Mode())
			case !linked && n > 1:
				t.Fatalf("%s has %d hard links without LinkUnchanged", p, n)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkDir fails t unless dir holds exactly files.
func checkDir(t *rapid.T, what, dir string, files dirlife.Files) {
	got, err := readTree(dir)
	if err != nil {
		t.Fatalf("%s %s: %v", what, dir, err)
	}
	if diff := cmp.Diff(map[string][]byte(files), map[string][]byte(got)); diff != "" {
		t.Fatalf("%s %s changed (-published +on disk):\n%s", what, dir, diff)
	}
}

// checkName fails t unless rec's directory is gen-<key> or gen-<key>-<a
// prefix of its digest, 12 hex digits or more>; for a directory PublishFS
// wrote (streamed), whose digest was known only once written, any 12 hex
// digits.
func checkName(t *rapid.T, rec publish.Record[int64, dirlife.Digest, int], streamed bool) {
	name := filepath.Base(rec.Dir)
	plain := fmt.Sprintf("gen-%d", rec.Key)
	if name == plain {
		return
	}
	suffix, ok := strings.CutPrefix(name, plain+"-")
	if streamed && ok && len(suffix) == 12 && strings.Trim(suffix, "0123456789abcdef") == "" {
		return
	}
	if !ok || len(suffix) < 12 || !strings.HasPrefix(rec.Digest.String(), suffix) {
		t.Fatalf("directory %s of %v: want %s or %s-<digest prefix>", name, rec.Identity(), plain, plain)
	}
}

// tempDir is t.TempDir for a rapid.T, which has none.
func tempDir(t *rapid.T) string { return dirtree.TempDir(t) }
