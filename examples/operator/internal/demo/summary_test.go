package demo

import (
	"strings"
	"testing"
)

func TestSummaryTextListsAFewExpectedFailures(t *testing.T) {
	s := &Summary{Publishes: PublishCounts{Total: 30, BuildFailed: 25}}
	for i := range maxListed {
		s.ExpectedFailures = append(s.ExpectedFailures, ExpectedFailure{Generation: int64(i + 1), Breakage: "broken", Error: "platform.cue:1:1: bad"})
	}
	var b strings.Builder
	if err := s.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	text := b.String()
	if n := strings.Count(text, "expected failure"); n != textListed+1 {
		t.Errorf("%d expected-failure lines, want %d and a count of the rest:\n%s", n, textListed+1, text)
	}
	if !strings.Contains(text, "and 22 more") || !strings.HasSuffix(text, "violations: 0\n") {
		t.Errorf("the text does not count the rest or end with the violations line:\n%s", text)
	}
}

func TestSummaryCountsEveryUnexpectedOutcome(t *testing.T) {
	var s Summary
	for range maxListed + 5 {
		s.unexpected("boom")
	}
	if len(s.Unexpected) != maxListed || s.UnexpectedCount != maxListed+5 || s.OK() {
		t.Errorf("listed %d, counted %d, OK %v: want %d listed, %d counted, not OK", len(s.Unexpected), s.UnexpectedCount, s.OK(), maxListed, maxListed+5)
	}
	var b strings.Builder
	s.WriteText(&b)
	if !strings.Contains(b.String(), "and 5 more") {
		t.Errorf("the text does not count the unlisted:\n%s", b.String())
	}
}
