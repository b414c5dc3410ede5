//go:build linux

package dirlife

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStreamExisting: a streamed write whose StreamOptions.Existing finds
// the staged content in another ID's directory (verify reads it and it
// matches) publishes nothing, syncing and renaming nothing and leaving no
// staging directory, and that directory is untouched; one whose offered
// directory was edited (verify reports the mismatch) publishes as usual;
// an error of Existing fails the write, publishing nothing; verify
// refuses a name that is no ID's directory; and ctx's end during verify
// fails the write with ctx's error.
func TestStreamExisting(t *testing.T) {
	for _, k := range streamKinds[1:] {
		t.Run(k.name, func(t *testing.T) {
			l := genLayout(t)
			first, err := k.write(l, 5, artifact, StreamOptions{})
			if err != nil {
				t.Fatal(err)
			}
			before, err := os.Stat(l.Dir(5))
			if err != nil {
				t.Fatal(err)
			}
			var offered Digest
			var verified []error
			existing := func(names ...string) func(Digest, func(string) error) (bool, error) {
				return func(d Digest, verify func(string) error) (bool, error) {
					offered, verified = d, nil
					for _, n := range names {
						err := verify(n)
						verified = append(verified, err)
						if err == nil {
							return true, nil
						}
					}
					return false, nil
				}
			}

			rec := newRecorder()
			l.faults = rec.hook
			w, err := k.write(l, 9, artifact, StreamOptions{Existing: existing("gen-5")})
			l.faults = nil
			if err != nil || w.Published || w.Digest != first.Digest || offered != first.Digest || len(verified) != 1 || verified[0] != nil {
				t.Fatalf("a write of gen-5's content as 9 = %+v, %v (offered %v, verified %v); want it unpublished", w, err, offered, verified)
			}
			for _, e := range rec.events {
				if strings.HasPrefix(e, "sync") || strings.HasPrefix(e, stepRename) || strings.HasPrefix(e, stepExchange) || strings.HasPrefix(e, stepDigestAttr) {
					t.Fatalf("a write found existing took step %q: %v", e, rec.events)
				}
			}
			settle(t, l)
			if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-5"}) {
				t.Fatalf("root = %v, want gen-5 alone", got)
			}
			if after, err := os.Stat(l.Dir(5)); err != nil || !os.SameFile(before, after) {
				t.Fatalf("gen-5 was replaced: %v", err)
			}

			// An edit, size and all, that verify reads.
			f := filepath.Join(l.Dir(5), "lib", "v1", "libx.so")
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			data[0] ^= 1
			if err := os.WriteFile(f, data, 0); err != nil {
				t.Fatal(err)
			}
			w, err = k.write(l, 9, artifact, StreamOptions{Existing: existing("gen-5")})
			if err != nil || !w.Published || len(verified) != 1 || !errors.Is(verified[0], ErrDigestMismatch) {
				t.Fatalf("beside an edited gen-5: %+v, %v, verified %v; want published and a mismatch", w, err, verified)
			}
			if got, _ := readEntries(t, l.Dir(9)); !sameTree(got, artifact) {
				t.Fatalf("Dir(9) = %v", got)
			}

			boom := errors.New("boom")
			if _, err := k.write(l, 10, artifact, StreamOptions{Existing: func(Digest, func(string) error) (bool, error) { return false, boom }}); !errors.Is(err, boom) {
				t.Fatalf("a write whose Existing failed = %v, want boom", err)
			}
			w, err = k.write(l, 10, artifact, StreamOptions{Existing: existing("stray", "gen-404", "gen-9")})
			if err != nil || w.Published || len(verified) != 3 || verified[2] != nil {
				t.Fatalf("verify of stray, gen-404, gen-9 = %+v, %v, %v", w, err, verified)
			}
			if ne, ok := errors.AsType[*NameError](verified[0]); !ok || ne.Name != "stray" {
				t.Fatalf("verify(stray) = %v, want a NameError", verified[0])
			}
			if !errors.Is(verified[1], fs.ErrNotExist) {
				t.Fatalf("verify(gen-404) = %v, want it missing", verified[1])
			}

			ctx, cancel := context.WithCancel(context.Background())
			_, err = l.CopyFS(ctx, 10, treeFS(artifact), StreamOptions{Existing: func(_ Digest, verify func(string) error) (bool, error) {
				cancel()
				err := verify("gen-9")
				return err == nil, err
			}})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("a write whose ctx ended during verify = %v, want context.Canceled", err)
			}
			settle(t, l)
			if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-5", "gen-9"}) {
				t.Fatalf("root = %v, want gen-5 and gen-9", got)
			}
		})
	}
}
