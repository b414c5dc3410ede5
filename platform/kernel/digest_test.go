package kernel_test

import (
	"context"
	"testing"

	"leasekit.dev/platform/kernel"
	"leasekit.dev/platform/platformmodule"
)

// TestDigestIsWhatTheReadsTake: Digest of a module's files is the digest
// a build gives the Platform and a read gives the snapshot, from disk and
// from Files alike; a change of a byte or of a name changes it.
func TestDigestIsWhatTheReadsTake(t *testing.T) {
	ctx := context.Background()
	k := kernel.New()
	files, err := platformmodule.Generate(acme)
	if err != nil {
		t.Fatal(err)
	}
	dir := generated(t, acme)
	p, err := k.BuildPlatform(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := kernel.Digest(files)
	if p.Digest != want {
		t.Errorf("BuildPlatform's Digest = %s, Digest of the files = %s", p.Digest, want)
	}
	for name, in := range map[string]kernel.Instance{"dir": {Dir: dir}, "files": {Files: files}} {
		s, err := k.ReadInstance(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		if s.Digest() != want {
			t.Errorf("ReadInstance(%s).Digest() = %s, Digest of the files = %s", name, s.Digest(), want)
		}
	}
	changed := map[string][]byte{}
	for name, data := range files {
		changed[name] = data
	}
	changed["platform.cue"] = append([]byte(nil), files["platform.cue"]...)
	changed["platform.cue"][0] ^= 1
	if kernel.Digest(changed) == want {
		t.Error("a changed byte leaves the Digest as it was")
	}
	delete(changed, "platform.cue")
	changed["platform2.cue"] = files["platform.cue"]
	if kernel.Digest(changed) == want {
		t.Error("a renamed file leaves the Digest as it was")
	}
}
