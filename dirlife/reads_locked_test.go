//go:build unix

package dirlife

import (
	"context"
	"errors"
	"os"
	"sync"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadsHoldTheLock: Recorded, reading a directory's digest, and
// Verify, reading its files, hold Root's lock on the system, so that no
// Prune or Reset of another process runs meanwhile: an exclusive lock
// of Root's is refused while they read.
func TestReadsHoldTheLock(t *testing.T) {
	files := Files{"a": []byte("a"), "d/b": []byte("b")}
	cases := []struct {
		name string
		step string
		call func(l Layout[int64]) error
	}{
		{"Recorded", stepDigestAttr, func(l Layout[int64]) error { _, _, err := l.Recorded(); return err }},
		{"Verify", stepHash, func(l Layout[int64]) error {
			want, err := l.DigestFiles(files)
			if err != nil {
				return err
			}
			return l.Verify(context.Background(), 1, want, nil)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := genLayout(t)
			l.RecordDigest = true
			mustWrite(t, l, 1, files)
			if _, held, err := l.Recorded(); err != nil || !held {
				t.Skip("the temporary directory's filesystem holds no extended attributes")
			}
			var (
				mu    sync.Mutex // the seam is called from Verify's hashers at once
				reads int
				free  []error
			)
			l.faults = func(step, name string) error {
				if step != c.step {
					return nil
				}
				d, err := os.Open(l.Root)
				if err != nil {
					return err
				}
				defer d.Close()
				mu.Lock()
				defer mu.Unlock()
				reads++
				switch err := unix.Flock(int(d.Fd()), unix.LOCK_EX|unix.LOCK_NB); {
				case err == nil:
					unix.Flock(int(d.Fd()), unix.LOCK_UN)
					free = append(free, errors.New(name+": Root's lock was free"))
				case !errors.Is(err, unix.EWOULDBLOCK):
					return err
				}
				return nil
			}
			if err := c.call(l); err != nil {
				t.Fatal(err)
			}
			if reads == 0 {
				t.Fatalf("%s read nothing through the seam", c.name)
			}
			if len(free) > 0 {
				t.Fatalf("%s read with Root unlocked: %v", c.name, errors.Join(free...))
			}
		})
	}
}
