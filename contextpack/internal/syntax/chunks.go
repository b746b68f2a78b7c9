package syntax

import "slices"

// buildChunks indexes windows of lines for lexical similarity. Windows of
// prev (the previous version of the file, may be nil) whose text is the
// same at the same lines keep their terms, so a keystroke re-scans only
// the windows around it. Identifiers never span lines, so scanning one
// window's text finds exactly the occurrences a scan of the whole file
// attributes to its lines.
func (a *Analysis) buildChunks(window, stride int, prev *Analysis) {
	if window < 1 {
		window = 1
	}
	if stride < 1 || stride > window {
		stride = window
	}
	if prev != nil && prev.Lang == a.Lang {
		a.buildChunksFrom(prev, window, stride)
		return
	}
	type occ struct {
		t    Term
		line int32
	}
	var occs []occ
	line := int32(0)
	ScanIdents(a.Content, a.Lang, func(id string, off int) bool {
		for line+1 < int32(len(a.Lines)) && int(a.Lines[line+1]) <= off {
			line++
		}
		occs = append(occs, occ{HashIdent(id), line})
		return true
	})
	n := int32(len(a.Lines))
	var buf []Term
	oi := 0
	for s := int32(0); s < n; s += int32(stride) {
		e := min(s+int32(window)-1, n-1)
		for oi < len(occs) && occs[oi].line < s {
			oi++
		}
		buf = buf[:0]
		for j := oi; j < len(occs) && occs[j].line <= e; j++ {
			buf = append(buf, occs[j].t)
		}
		a.addChunk(s, e, buf)
		if e == n-1 {
			break
		}
	}
}

// buildChunksFrom is buildChunks reusing prev's windows.
func (a *Analysis) buildChunksFrom(prev *Analysis, window, stride int) {
	n := int32(len(a.Lines))
	var buf []Term
	pi := 0 // prev.chunks is sorted by start
	for s := int32(0); s < n; s += int32(stride) {
		e := min(s+int32(window)-1, n-1)
		for pi < len(prev.Chunks) && prev.Chunks[pi].Start < s {
			pi++
		}
		text := a.RangeText(s, e)
		if e < prev.NumLines() && prev.RangeText(s, e) == text {
			// Same text: the same terms, or no chunk when it had none.
			if pi < len(prev.Chunks) && prev.Chunks[pi].Start == s && prev.Chunks[pi].End == e {
				a.Chunks = append(a.Chunks, prev.Chunks[pi])
			}
		} else {
			buf = buf[:0]
			ScanIdents(text, a.Lang, func(id string, _ int) bool {
				buf = append(buf, HashIdent(id))
				return true
			})
			a.addChunk(s, e, buf)
		}
		if e == n-1 {
			break
		}
	}
}

// addChunk adds the window [s, e] with the identifier terms in buf (which
// it sorts); a window without identifiers is not indexed.
func (a *Analysis) addChunk(s, e int32, buf []Term) {
	if len(buf) == 0 {
		return
	}
	slices.Sort(buf)
	var terms []TermCount
	for k := 0; k < len(buf); {
		j := k
		for j < len(buf) && buf[j] == buf[k] {
			j++
		}
		terms = append(terms, TermCount{buf[k], uint16(min(j-k, 65535))})
		k = j
	}
	a.Chunks = append(a.Chunks, Chunk{Start: s, End: e, Length: uint32(len(buf)), Terms: slices.Clip(terms)})
}
