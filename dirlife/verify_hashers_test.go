//go:build linux

package dirlife

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"leasekit.dev/dirlife/internal/rootlock"
	"leasekit.dev/dirlife/internal/tree"
)

// TestVerifyHashersAgreeWithTheWalk: Verify's walk hashing files aside,
// several at once, and the walk hashing each in turn agree on every tree,
// intact or corrupted: the same digest, or the same error, the first in
// walk order when a read fails before an entry no write publishes.
func TestVerifyHashersAgreeWithTheWalk(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		l := genLayout(t)
		files := Files{}
		for i := range rapid.IntRange(1, 40).Draw(rt, "files") {
			name := fmt.Sprintf("d%d/e%d/f%02d", rapid.IntRange(0, 3).Draw(rt, "dir"), rapid.IntRange(0, 2).Draw(rt, "sub"), i)
			if rapid.Bool().Draw(rt, "top") {
				name = fmt.Sprintf("f%02d", i)
			}
			files[name] = make([]byte, rapid.IntRange(0, 3*tree.BufSize).Draw(rt, "size"))
			for j := range files[name] {
				files[name][j] = byte(i + j)
			}
		}
		mustWrite(t, l, 1, files)
		dir := filepath.Join(l.Root, "gen-1")
		var paths []string
		for name := range files {
			paths = append(paths, name)
		}
		pick := func(label string) string {
			return paths[rapid.IntRange(0, len(paths)-1).Draw(rt, label)]
		}
		switch rapid.IntRange(0, 3).Draw(rt, "damage") {
		case 1: // a byte flipped, where the file has one
			p := filepath.Join(dir, pick("flipped"))
			b, _ := os.ReadFile(p)
			if len(b) > 0 {
				b[rapid.IntRange(0, len(b)-1).Draw(rt, "at")] ^= 1
				os.WriteFile(p, b, 0o644)
			}
		case 2: // a file no write publishes
			os.Chmod(filepath.Join(dir, pick("setuid")), 0o644|os.ModeSetuid)
		case 3: // a read that fails, and maybe a refused entry after it
			failing := filepath.Join("gen-1", pick("unreadable"))
			l.faults = func(step, name string) error {
				if step == stepHash && name == failing {
					return errInjected
				}
				return nil
			}
			os.Chmod(filepath.Join(dir, pick("setuid")), 0o644|os.ModeSetuid)
		}

		digest := func(hashers int) (Digest, error) {
			h, err := l.openRoot("verify", false, rootlock.Shared)
			if err != nil {
				rt.Fatal(err)
			}
			defer h.release()
			return l.digestDir(context.Background(), h, "gen-1", hashers, nil)
		}
		want, wantErr := digest(0)
		for _, n := range []int{2, 3, maxHashers} {
			got, err := digest(n)
			if got != want || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				rt.Fatalf("with %d hashers: %s, %v; the walk alone: %s, %v", n, got, err, want, wantErr)
			}
		}
	})
}

// TestDigestFilesHashersAgree: DigestFiles's sums taken several at once
// equal those taken one by one, and the digest of a large artifact is the
// one Verify reads back from its Write.
func TestDigestFilesHashersAgree(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		var data [][]byte
		for i := range rapid.IntRange(0, 30).Draw(rt, "files") {
			b := make([]byte, rapid.IntRange(0, 200<<10).Draw(rt, "size"))
			for j := range b {
				b[j] = byte(i*7 + j)
			}
			data = append(data, b)
		}
		one := tree.SumAll(data, 1)
		for _, n := range []int{2, 3, maxHashers} {
			if got := tree.SumAll(data, n); !slices.Equal(got, one) {
				rt.Fatalf("with %d hashers the sums differ from one by one", n)
			}
		}
	})
	l := genLayout(t)
	files := Files{}
	for i := range 24 {
		files[fmt.Sprintf("d%d/f%02d", i%3, i)] = bytes.Repeat([]byte{byte(i)}, 100<<10+i)
	}
	mustWrite(t, l, 1, files)
	d, err := digestFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Verify(context.Background(), 1, d, nil); err != nil {
		t.Fatalf("the digest of %d files, 2.4 MiB: %v", len(files), err)
	}
}
