package assemble

import (
	"strings"
	"sync"
	"sync/atomic"

	"github.com/infill-dev/infill/contextpack/internal/syntax"
)

// Exact counting by segments.
//
// Qwen2's pre-tokenizer splits text with the pattern
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// and BPE never merges across pre-tokens. No alternative can consume a
// newline and then continue into a line that holds a non-space character:
// the newline is matched by \s*[\r\n]+ (which must end on a newline) or
// absorbed by the trailing [\r\n]* of a punctuation run, both of which stop
// before such a line. So a text splits, without changing its tokens, before
// every line that is not blank. A segment is one non-blank line plus the
// blank lines after it (the first segment may also be leading blank lines),
// and the token count of a text is exactly the sum of the counts of its
// segments. Special tokens are split out before pre-tokenization, so text on
// either side of one counts independently too.
//
// The assembler therefore renders every part of a prompt as whole segments
// (parts start at a non-blank line or right after a special token, and end
// with a newline or right before a special token), counts segments once
// through a bounded cache, and gets the prompt's exact count as a sum.

// forSegments calls fn for each segment of s in order.
func forSegments(s string, fn func(seg string)) {
	start := 0
	i := 0
	for i < len(s) {
		j := strings.IndexByte(s[i:], '\n')
		if j < 0 {
			break
		}
		next := i + j + 1 // start of the following line
		if next < len(s) && !blankLineAt(s, next) {
			fn(s[start:next])
			start = next
		}
		i = next
	}
	if start < len(s) {
		fn(s[start:])
	}
}

// blankLineAt reports whether the line starting at off holds only white
// space (Unicode White_Space, which is what \s matches in the pattern); a
// final line without a newline that is all white space counts as blank.
func blankLineAt(s string, off int) bool {
	end := strings.IndexByte(s[off:], '\n')
	if end < 0 {
		end = len(s)
	} else {
		end += off
	}
	return syntax.IsBlank(s[off:end])
}

// Tokenizer counts tokens exactly as the model does.
type Tokenizer interface {
	// Count returns the number of tokens of text encoded as ordinary text.
	Count(text string) int
}

// Counter counts user text exactly (after neutral) with a cache of segment
// counts shared by all requests, and counts line ranges of analyses as the
// prompt renders them (elision lines between them, counts kept per
// analysis). The cache holds at most 2×max segments: when the current
// generation fills, it becomes the old one.
type Counter struct {
	tok     Tokenizer
	neutral func(string) string
	max     int
	// maxTokens is the largest count worth making: a longer text cannot
	// fit any prompt (the model's context).
	maxTokens int

	mu  sync.Mutex
	cur map[string]int32
	old map[string]int32

	// elision[kind][tabs, spaces][n]: 1 + the tokens of an elision line
	// indented by n tabs or spaces (0: not counted yet).
	elision [3][2][64]atomic.Int32
}

// maxCachedSegment is the longest segment kept in the cache; longer ones
// (minified code) are rare and counted each time.
const maxCachedSegment = 4096

// NewCounter returns a counter of tok's tokens after neutral, caching up
// to 2×max segments; maxTokens is the most any prompt can hold (longer
// ranges are not counted).
func NewCounter(tok Tokenizer, neutral func(string) string, max, maxTokens int) *Counter {
	if max < 16 {
		max = 16
	}
	return &Counter{tok: tok, neutral: neutral, max: max, maxTokens: maxTokens, cur: make(map[string]int32)}
}

// segment counts one segment of user text.
func (c *Counter) segment(s string) int {
	if len(s) > maxCachedSegment {
		return c.tok.Count(c.neutral(s))
	}
	c.mu.Lock()
	n, ok := c.cur[s]
	if !ok {
		if n, ok = c.old[s]; ok {
			c.putLocked(s, n)
		}
	}
	c.mu.Unlock()
	if ok {
		return int(n)
	}
	n = int32(c.tok.Count(c.neutral(s)))
	c.mu.Lock()
	c.putLocked(strings.Clone(s), n)
	c.mu.Unlock()
	return int(n)
}

func (c *Counter) putLocked(s string, n int32) {
	if len(c.cur) >= c.max {
		c.old = c.cur
		c.cur = make(map[string]int32, c.max/4)
	}
	c.cur[s] = n
}

// text counts s exactly as the sum of its segments.
func (c *Counter) text(s string) int {
	total := 0
	forSegments(s, func(seg string) { total += c.segment(seg) })
	return total
}

// plain counts a short string that is not segment-aligned (a path line)
// with the cache.
func (c *Counter) plain(s string) int { return c.segment(s) }

// rangesTokens counts ranges rendered with elision lines between
// non-adjacent ones; lead (>= 0) is the line after preceding content, so
// an elision goes first when ranges[0] starts later; trail (>= 0) is the
// line where following content starts.
func (c *Counter) rangesTokens(a *syntax.Analysis, rs []LineRange, lead, trail int32) int {
	if len(rs) == 0 {
		return 0
	}
	n := 0
	if lead >= 0 && rs[0].First > lead {
		n += c.elisionTokens(a, rs[0].First)
	}
	for i, r := range rs {
		if i > 0 && r.First > rs[i-1].Last+1 {
			n += c.elisionTokens(a, r.First)
		}
		n += c.rangeTokens(a, r.First, r.Last)
	}
	if last := rs[len(rs)-1]; trail >= 0 && trail > last.Last+1 {
		n += c.elisionTokens(a, trail)
	}
	return n
}

// elisionLine marks left-out lines in the file's comment syntax.
func elisionLine(a *syntax.Analysis, indent string) string {
	switch elisionKind(a.Lang) {
	case 1:
		return indent + "# ...\n"
	case 2:
		return indent + "...\n"
	}
	return indent + "// ...\n"
}

func elisionKind(l syntax.Lang) int {
	switch l {
	case syntax.LangPython:
		return 1
	case syntax.LangPlain:
		return 2
	}
	return 0
}

// elisionTokens counts the elision line at line i's indentation. The
// counts of indents of one kind of blank (tabs or spaces, fewer than 64)
// are kept in a table: ranges with gaps ask for them at every keystroke.
func (c *Counter) elisionTokens(a *syntax.Analysis, i int32) int {
	ind := lineIndent(a, i)
	n := len(ind)
	if n >= len(c.elision[0][0]) || strings.Count(ind, ind[:min(n, 1)]) != n && n > 0 {
		return c.segment(elisionLine(a, ind))
	}
	w := 0
	if n > 0 && ind[0] == ' ' {
		w = 1
	}
	e := &c.elision[elisionKind(a.Lang)][w][n]
	if v := e.Load(); v > 0 {
		return int(v - 1)
	}
	k := c.segment(elisionLine(a, ind))
	e.Store(int32(k + 1))
	return k
}

// rangeTokens counts lines [s, e] of a (ending with a newline), cached.
func (c *Counter) rangeTokens(a *syntax.Analysis, s, e int32) int {
	if a.View != nil && (e < a.ViewLine || s > a.ViewLine) {
		a = a.View // the same text, and counts kept across keystrokes
	}
	if tooLong(a.LineEnd(e)-int(a.Lines[s]), c.maxTokens) {
		return c.maxTokens + 1 // cannot fit any prompt; not counted
	}
	if n, ok := a.TokenCounts.Get(s, e); ok {
		return int(n)
	}
	n := int32(c.text(rangeTextNL(a, s, e)))
	a.TokenCounts.Put(s, e, n)
	return int(n)
}

// rangeTextNL is lines [s, e] with a final newline guaranteed.
func rangeTextNL(a *syntax.Analysis, s, e int32) string {
	t := a.RangeText(s, e)
	if !strings.HasSuffix(t, "\n") {
		t += "\n"
	}
	return t
}

// Rendered counts s, text as it stands in a rendered prompt (user text
// already neutralised, no control tokens), exactly as the sum of its
// segments. A segment without neutralised token text is counted through
// the cache (neutral leaves it as it is); one with it (a "<" followed by
// U+200B), whose neutralisation would add a second U+200B, is counted
// as it is.
func (c *Counter) Rendered(s string) int {
	total := 0
	forSegments(s, func(seg string) {
		if strings.Contains(seg, "<\u200B") {
			total += c.tok.Count(seg)
			return
		}
		total += c.segment(seg)
	})
	return total
}
