package kernel

import (
	"context"
	"io/fs"
	"path"
	"sync"
	"testing"

	"leasekit.dev/platform/kernel/internal/modread"
)

// countingSource counts the opens of each file of a module directory.
type countingSource struct {
	modread.Source
	mu    *sync.Mutex
	opens map[string]int
}

func (s countingSource) Open(name string) (fs.File, error) {
	s.mu.Lock()
	s.opens[name]++
	s.mu.Unlock()
	return s.Source.Open(name)
}

// TestEachFileReadOnce: a build reads each file of its module once, even
// when the loader loads the module twice (quick, then in full for an
// import of the module's own package); the digest and the loader's second
// pass come from the bytes already read.
func TestEachFileReadOnce(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		modread.ModuleFile: testModuleFile,
		"platform.cue": "package platform\n\nimport \"platform.leasekit.dev/test/sub\"\n\nname: \"acme\"\nlabels: fromsub: sub.x\n" +
			"catalogs: \"example.com/catalogs/web@v1\": {version: \"v1.4.0\", kinds: [\"Deployment\"]}\n",
		"sub/sub.cue": "package sub\n\nx: \"y\"\n",
	}
	writeFiles(t, dir, files)

	var mu sync.Mutex
	opens := map[string]int{}
	open := modread.OpenDir
	t.Cleanup(func() { modread.OpenDir = open })
	modread.OpenDir = func(dir string) (modread.Source, func(), error) {
		src, closeSrc, err := open(dir)
		return countingSource{src, &mu, opens}, closeSrc, err
	}
	p, err := New().BuildPlatform(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if p.Labels["fromsub"] != "y" {
		t.Fatalf("labels %v: the module's own package was not loaded", p.Labels)
	}
	mu.Lock()
	defer mu.Unlock()
	for name := range files {
		if opens[name] != 1 {
			t.Errorf("%s opened %d times, want once", name, opens[name])
		}
	}
	for name, n := range opens {
		if path.Ext(name) != "" && n > 1 {
			t.Errorf("%s opened %d times", name, n)
		}
	}
}
