package inference

// indentStop is llama.cpp server's n_indent rule over streamed text: every
// line after the first must be indented by at least min spaces or tabs, and
// generation ends at the first line that is not. A blank line has
// indentation 0. The text is cut after that line's indentation, as
// llama.cpp cuts it (so the completion ends with a newline and whatever
// indentation the short line had). The first line continues the cursor's
// line and is never checked.
type indentStop struct {
	min     int
	inLead  bool // inside the leading whitespace of a line after the first
	leading int  // spaces and tabs seen so far in that whitespace
}

// feed takes the next piece of text and returns how many of its bytes to
// keep; hit reports that the rule ended generation there.
func (d *indentStop) feed(s string) (keep int, hit bool) {
	if d.min <= 0 {
		return len(s), false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if d.inLead {
			if c == ' ' || c == '\t' {
				d.leading++
				continue
			}
			if d.leading < d.min {
				return i, true
			}
			d.inLead = false
		}
		if c == '\n' {
			d.inLead, d.leading = true, 0
		}
	}
	return len(s), false
}
