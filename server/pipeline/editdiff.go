package pipeline

import "unicode/utf8"

// edit is the smallest edit that turns in's region into region: the
// region's text with the longest common prefix and, of the rest, the
// longest common suffix left alone (cut at character boundaries), the
// middle replaced. One contiguous replacement covering every change is
// what the API answers (PredictedEdit), and for one replacement the
// common prefix and suffix are exactly what a diff's first and last hunks
// would leave, so no diff algorithm is needed here (go-udiff writes the
// recent edits' diffs). No edit, with the reason, when the rewrite is
// the region itself.
func (in *editInput) edit(region string) (*PredictedEdit, string) {
	old := in.text[in.region.Start:in.region.End]
	if region == old {
		return nil, "the model kept the editable region as it was"
	}
	p, s := commonAffixes(old, region)
	return &PredictedEdit{Path: in.path, Span: Span{Start: in.region.Start + p, End: in.region.End - s}, Text: region[p : len(region)-s]}, ""
}

// commonAffixes returns the byte lengths of the longest common prefix of
// a and b and of the longest common suffix of what follows it in both,
// each ending at a character boundary of both.
func commonAffixes(a, b string) (prefix, suffix int) {
	n := min(len(a), len(b))
	for prefix < n && a[prefix] == b[prefix] {
		prefix++
	}
	for prefix > 0 && (!boundary(a, prefix) || !boundary(b, prefix)) {
		prefix--
	}
	n -= prefix
	for suffix < n && a[len(a)-1-suffix] == b[len(b)-1-suffix] {
		suffix++
	}
	for suffix > 0 && (!boundary(a, len(a)-suffix) || !boundary(b, len(b)-suffix)) {
		suffix--
	}
	return prefix, suffix
}

// boundary reports whether byte i of s starts a character (or is its end).
func boundary(s string, i int) bool { return i >= len(s) || utf8.RuneStart(s[i]) }
