package inference

import "strings"

// QwenStops is the Qwen2.5-Coder stop set as text: <|endoftext|>,
// <|im_end|> and <|fim_prefix|> … <|file_sep|> (ids 151643, 151645,
// 151659–151664). Generation also ends at the first <|file_sep|>.
var QwenStops = []string{
	"<|endoftext|>", "<|im_end|>",
	"<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
	"<|repo_name|>", "<|file_sep|>",
}

// stopMatcher finds stop strings in streamed text, holding back only the
// tail that could still become a stop string. Stop strings are valid UTF-8
// and held text starts where one could begin, so emitted pieces never split
// a character.
type stopMatcher struct {
	model   []string // model stop set: FinishStop
	user    []string // request stop strings: FinishStopSequence
	maxLen  int      // longest stop string
	pending string
}

func newStopMatcher(model, user []string) *stopMatcher {
	m := &stopMatcher{model: model, user: user}
	for _, set := range [][]string{model, user} {
		for _, s := range set {
			m.maxLen = max(m.maxLen, len(s))
		}
	}
	return m
}

// feed adds text and returns what can be emitted now; when a stop string
// matched, reason is non-zero and the text before it is returned.
func (m *stopMatcher) feed(text string) (emit string, reason FinishReason) {
	m.pending += text
	at, reason := -1, FinishUnknown
	find := func(stops []string, r FinishReason) {
		for _, s := range stops {
			if i := strings.Index(m.pending, s); i >= 0 && (at < 0 || i < at) {
				at, reason = i, r
			}
		}
	}
	find(m.model, FinishStop)
	find(m.user, FinishStopSequence)
	if at >= 0 {
		emit, m.pending = m.pending[:at], ""
		return emit, reason
	}
	hold := len(m.pending)
	for i := len(m.pending) - 1; i >= 0 && len(m.pending)-i < m.maxLen; i-- {
		if m.isStopPrefix(m.pending[i:]) {
			hold = i
		}
	}
	emit, m.pending = m.pending[:hold], m.pending[hold:]
	return emit, FinishUnknown
}

// flush returns text still held at the end of the stream.
func (m *stopMatcher) flush() string {
	s := m.pending
	m.pending = ""
	return s
}

func (m *stopMatcher) isStopPrefix(tail string) bool {
	for _, s := range m.model {
		if strings.HasPrefix(s, tail) {
			return true
		}
	}
	for _, s := range m.user {
		if strings.HasPrefix(s, tail) {
			return true
		}
	}
	return false
}
