package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// lockedBuffer is a bytes.Buffer safe to read while a StatusLine writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestStatusLineDegradesToPlainLines(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out lockedBuffer
		ctx, cancel := context.WithCancel(t.Context())
		n := 0
		done := make(chan struct{})
		go func() {
			NewStatusLine(&out, false, time.Second).Run(ctx, func() string { n++; return "status " + string(rune('0'+n)) })
			close(done)
		}()
		time.Sleep(3500 * time.Millisecond)
		cancel()
		<-done
		if got, want := out.String(), "status 1\nstatus 2\nstatus 3\n"; got != want {
			t.Errorf("not a terminal: wrote %q, want %q", got, want)
		}
	})
}

func TestStatusLineRedrawsInPlaceOnATerminal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out lockedBuffer
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			NewStatusLine(&out, true, time.Hour).Run(ctx, func() string { return "status" })
			close(done)
		}()
		time.Sleep(time.Second + redraw/2)
		cancel()
		<-done
		got := out.String()
		draws := int(time.Second / redraw)
		if want := strings.Repeat(clearLine+"status", draws) + clearLine; got != want {
			t.Errorf("terminal: wrote %q, want %q", got, want)
		}
		if strings.Contains(got, "\n") {
			t.Error("a terminal's status line wrote a newline")
		}
	})
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if IsTerminal(f) || IsTerminal(w) {
		t.Error("a regular file or a pipe is taken for a terminal")
	}
	if null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0); err == nil {
		defer null.Close()
		if IsTerminal(null) {
			t.Errorf("%s, a character device, is taken for a terminal", os.DevNull)
		}
		if w := TerminalWidth(null); w != 0 {
			t.Errorf("%s has a terminal width of %d, want 0", os.DevNull, w)
		}
	}
	if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
		defer tty.Close()
		if !IsTerminal(tty) {
			t.Error("/dev/tty is not taken for a terminal")
		}
	}
}

// A line wider than the terminal wraps, and a wrapped line cannot be
// redrawn in place: each redraw would leave a line behind. The line is cut
// to one column less than the terminal's width, asked at every redraw.
func TestStatusLineFitsTheTerminalWidth(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out lockedBuffer
		ctx, cancel := context.WithCancel(t.Context())
		widths := []int{10, 0, 4, 1000}
		draw := 0
		done := make(chan struct{})
		go func() {
			NewStatusLine(&out, true, time.Hour).FitTo(func() int {
				w := widths[draw%len(widths)]
				draw++
				return w
			}).Run(ctx, func() string { return "generation 12  on disk [11 12]" })
			close(done)
		}()
		time.Sleep(4*redraw + redraw/2)
		cancel()
		<-done
		want := clearLine + "generatio" + clearLine + "generation 12  on disk [11 12]" +
			clearLine + "gen" + clearLine + "generation 12  on disk [11 12]" + clearLine
		if got := out.String(); got != want {
			t.Errorf("wrote %q, want %q", got, want)
		}
	})
}

func TestFitCutsRunesNotBytes(t *testing.T) {
	for _, c := range []struct {
		line  string
		width int
		want  string
	}{
		{"abc", 0, "abc"},
		{"abc", -1, "abc"},
		{"abc", 1, ""},
		{"abc", 3, "ab"},
		{"abc", 4, "abc"},
		{"x…yz", 3, "x…"},
	} {
		if got := fit(c.line, c.width); got != c.want {
			t.Errorf("fit(%q, %d) = %q, want %q", c.line, c.width, got, c.want)
		}
	}
}

// A run shorter than the period still writes one plain line, when it ends.
func TestStatusLineWritesOnceWhenStoppedBeforeAPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var out lockedBuffer
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			NewStatusLine(&out, false, time.Second).Run(ctx, func() string { return "status" })
			close(done)
		}()
		time.Sleep(time.Second / 2)
		cancel()
		<-done
		if got, want := out.String(), "status\n"; got != want {
			t.Errorf("stopped before a period: wrote %q, want %q", got, want)
		}
	})
}
