package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"
)

// A StatusLine shows a run's progress on w. On a terminal it redraws one
// line in place (carriage return, clear to end of line) several times a
// second; elsewhere (a pipe, a file, a CI log) it writes a plain line every
// period instead, so a log gets a few lines rather than a smear of
// redraws.
type StatusLine struct {
	w        io.Writer
	terminal bool
	period   time.Duration
	drawn    bool
}

// redraw is how often a terminal's line is redrawn.
const redraw = 200 * time.Millisecond

// clearLine returns the cursor to the start of the line and clears it.
const clearLine = "\r\x1b[K"

// NewStatusLine returns a status line on w, redrawn in place when terminal
// is true, and written as a plain line every period otherwise.
func NewStatusLine(w io.Writer, terminal bool, period time.Duration) *StatusLine {
	return &StatusLine{w: w, terminal: terminal, period: period}
}

// IsTerminal reports whether f is a terminal (a character device).
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Run shows status() until ctx ends, then clears a terminal's line so what
// follows starts on a clean one. status is called from Run's goroutine.
func (s *StatusLine) Run(ctx context.Context, status func() string) {
	every := s.period
	if s.terminal {
		every = redraw
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if s.drawn {
				fmt.Fprint(s.w, clearLine)
			}
			return
		case <-t.C:
			s.Show(status())
		}
	}
}

// Show writes line: in place on a terminal, as a line of its own
// elsewhere.
func (s *StatusLine) Show(line string) {
	if s.terminal {
		fmt.Fprint(s.w, clearLine+line)
		s.drawn = true
		return
	}
	fmt.Fprintln(s.w, line)
}
