//go:build unix

package dirlife

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// manyFiles is a tree whose removal takes a while: many files in a few
// directories.
func manyFiles(n int) Files {
	files := make(Files, n)
	for i := range n {
		files[fmt.Sprintf("d%02d/f%05d", i%50, i)] = nil
	}
	return files
}

// TestStrayNamedLikeIDNeverCostsAPublication: a file planted in Root under
// an ID's name while a large tree is being removed is garbage that the
// next Prune removes at once; a later Write of that ID publishes a
// directory that a Prune keeping it never removes.
func TestStrayNamedLikeIDNeverCostsAPublication(t *testing.T) {
	l := genLayout(t)
	l.NoSync = true
	mustWrite(t, l, 1, manyFiles(5_000))
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(l.Root, "gen-5"), []byte("stray"))
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	want := versionFiles(5, 1)
	mustWrite(t, l, 5, want)
	if err := l.Prune(5); err != nil {
		t.Fatal(err)
	}
	settle(t, l)
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-5"}) {
		t.Fatalf("Root = %v, want [gen-5]", got)
	}
	if got := readTree(t, l.Dir(5)); !sameFiles(got, want) {
		t.Fatalf("gen-5 holds %v, want %v", got, want)
	}
}

// TestSpecSentencesAtReturn checks the platform specification's Layout
// sentences with os.ReadDir at the instant each call returns: "Prune
// removes every entry under Root except the generation directories listed
// in keep"; a replaced directory is "moved aside before the swap and
// removed after it"; a failed Write's staging directory is "cleaned by the
// next Prune or Reset".
func TestSpecSentencesAtReturn(t *testing.T) {
	l := genLayout(t)
	l.NoSync = true
	mustWrite(t, l, 1, manyFiles(2_000))
	mustWrite(t, l, 2, manyFiles(2_000))
	if err := l.Prune(2); err != nil {
		t.Fatal(err)
	}
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-2"}) {
		t.Fatalf("Root right after Prune(2) = %v, want [gen-2]", got)
	}

	// A replacing Write: the old copy is gone when it returns.
	want := manyFiles(2_001)
	mustWrite(t, l, 2, want)
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-2"}) {
		t.Fatalf("Root right after a rewrite of gen-2 = %v, want [gen-2]", got)
	}
	if got := readTree(t, l.Dir(2)); !sameFiles(got, want) {
		t.Fatal("gen-2 does not hold the rewritten files")
	}

	// After a crash: a staging directory, a moved-aside copy and a stray
	// file, as a killed Write and a stranger leave them.
	stage := mkdirAll(t, filepath.Join(l.Root, stagePrefix+"0123456789abcdef"))
	for i := range 1_000 {
		writeFile(t, filepath.Join(stage, fmt.Sprintf("f%04d", i)), nil)
	}
	mkdirAll(t, filepath.Join(l.Root, asidePrefix+"fedcba9876543210", "sub"))
	writeFile(t, filepath.Join(l.Root, "stray"), nil)
	if err := l.Prune(2); err != nil {
		t.Fatal(err)
	}
	if got := rootEntries(t, l.Root); !slices.Equal(got, []string{"gen-2"}) {
		t.Fatalf("Root right after Prune(2) after a crash = %v, want [gen-2]", got)
	}
	if err := l.Reset(); err != nil {
		t.Fatal(err)
	}
	if got := rootEntries(t, l.Root); len(got) != 0 {
		t.Fatalf("Root right after Reset = %v, want nothing", got)
	}
	if _, err := os.Stat(l.Root); err != nil {
		t.Fatal(err)
	}
}
