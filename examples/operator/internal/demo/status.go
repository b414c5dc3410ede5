package demo

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"golang.org/x/term"
)

// A StatusLine shows a run's progress on w. On a terminal it redraws one
// line in place (carriage return, clear to end of line) several times a
// second; elsewhere (a pipe, a file, a CI log) it writes a plain line every
// period instead, so a log gets a few lines rather than a smear of
// redraws. On a terminal of known width the line is cut to fit: a line
// that wraps cannot be redrawn in place.
type StatusLine struct {
	w        io.Writer
	terminal bool
	period   time.Duration
	width    func() int
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

// FitTo makes a terminal's line fit width() columns, asked at every
// redraw so a resized terminal is followed; width() <= 0 means unknown (no
// cut). It returns s.
func (s *StatusLine) FitTo(width func() int) *StatusLine {
	s.width = width
	return s
}

// IsTerminal reports whether f is a terminal. A character device that is
// not one (/dev/null) is not.
func IsTerminal(f *os.File) bool {
	return term.IsTerminal(int(f.Fd()))
}

// TerminalWidth returns f's width in columns, or 0 when it is not a
// terminal or its size is unknown.
func TerminalWidth(f *os.File) int {
	w, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return w
}

// Run shows status() until ctx ends, then clears a terminal's line so what
// follows starts on a clean one; elsewhere, a run that ends before the
// first period writes one line then, so every log shows progress. status
// is called from Run's goroutine.
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
			switch {
			case s.terminal && s.drawn:
				fmt.Fprint(s.w, clearLine)
			case !s.terminal && !s.drawn:
				// A run shorter than a period still logs its progress
				// once.
				s.Show(status())
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
		if s.width != nil {
			line = fit(line, s.width())
		}
		fmt.Fprint(s.w, clearLine+line)
		s.drawn = true
		return
	}
	fmt.Fprintln(s.w, line)
	s.drawn = true
}

// fit cuts line to fewer than width runes, leaving the last column free so
// the cursor never wraps; width <= 0 leaves it whole.
func fit(line string, width int) string {
	if width <= 0 {
		return line
	}
	n := 0
	for i := range line {
		if n == width-1 {
			return line[:i]
		}
		n++
	}
	return line
}
