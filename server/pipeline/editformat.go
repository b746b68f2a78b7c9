package pipeline

import (
	"strings"

	"github.com/infill-dev/infill/contextpack/tokenizer"
	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/internal/editregion"
)

// The edit models' prompt formats, as their model cards and their editors'
// sources give them (docs/edit-prediction.md names the sources). User text
// (code, paths, diffs) goes in with its literal control tokens and the
// format's markers neutralised (a U+200B after the "<"); what the model
// gives back is restored.

// editFormat is one model's prompt format.
type editFormat interface {
	// shape places the editable region and the excerpt around the cursor.
	shape() editregion.Shape
	// render writes the raw prompt of in.
	render(in *editInput) string
	// stops are the stop strings generation adds for the format.
	stops() []string
	// parse reads the model's output (generation ended with finish) as
	// the region rewritten, or says why it cannot.
	parse(in *editInput, output string, finish inference.FinishReason) (region, reason string)
}

var editFormats = map[EditFormat]editFormat{EditFormatZeta: zetaFormat{}, EditFormatInstinct: instinctFormat{}}

// Markers shared by both formats.
const (
	markCursor      = "<|user_cursor_is_here|>"
	markRegionStart = "<|editable_region_start|>"
	markRegionEnd   = "<|editable_region_end|>"
	markFileStart   = "<|start_of_file|>" // Zeta
	markContextFile = "<|context_file|>"  // Instinct
	markSnippet     = "<|snippet|>"       // Instinct
)

var editMarkers = []string{markCursor, markRegionStart, markRegionEnd, markFileStart, markContextFile, markSnippet}

// neutralMarkers replaces the formats' markers in user text with look-alikes
// (a U+200B after the "<"), and restoreMarkers undoes it.
var (
	neutralMarkers, restoreMarkers = markerReplacers()
)

func markerReplacers() (*strings.Replacer, *strings.Replacer) {
	var fwd, back []string
	for _, m := range editMarkers {
		n := "<\u200B" + m[1:]
		fwd, back = append(fwd, m, n), append(back, n, m)
	}
	return strings.NewReplacer(fwd...), strings.NewReplacer(back...)
}

// userText is s ready for a raw edit prompt.
func userText(s string) string { return neutralMarkers.Replace(tokenizer.Neutralize(s)) }

// modelText is model output with user text's neutralisation undone.
func modelText(s string) string { return tokenizer.Restore(restoreMarkers.Replace(s)) }

// Zeta (zed-industries/zeta; Zed's "zeta1" rendering, crates/zeta_prompt).
type zetaFormat struct{}

const zetaInstruction = "### Instruction:\n" +
	"You are a code completion assistant and your task is to analyze user edits and then rewrite an " +
	"excerpt that the user provides, suggesting the appropriate edits within the excerpt, taking " +
	"into account the cursor location.\n\n### User Edits:\n\n"

// Zed's region is 150-350 tokens of whole syntax nodes with 150 tokens of
// context around it; infill takes whole lines: 4 above the cursor's to 8
// below, the excerpt 8 more each way.
func (zetaFormat) shape() editregion.Shape { return editregion.Zeta }

func (zetaFormat) stops() []string { return []string{markRegionEnd} }

// render writes
//
//	### Instruction: … ### User Edits:\n\n{events, oldest first, "\n\n" apart}
//	\n\n### User Excerpt:\n\n{excerpt}[\n\n{context files}]\n\n### Response:\n
//
// Each event is "User edited {path}:\n```diff\n{hunks}\n```". The excerpt is
// the cursor file's fenced block (zetaExcerpt). The model card's prompt has
// no place for cross-file context: infill puts each context file after the
// excerpt as a fenced block of its own, the form the prompt gives files,
// so that the model, which answers with the excerpt rewritten, finds the
// cursor file's block first as in training.
func (z zetaFormat) render(in *editInput) string {
	var b strings.Builder
	b.WriteString(zetaInstruction)
	for i, e := range in.edits {
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString("User edited " + userText(e.Path) + ":\n```diff\n" + userText(e.Diff) + "\n```")
	}
	b.WriteString("\n\n### User Excerpt:\n\n")
	b.WriteString(z.excerpt(in))
	for _, c := range in.context {
		b.WriteString("\n\n```" + userText(c.Path) + "\n" + neutralMarkers.Replace(c.Text) + "```")
	}
	b.WriteString("\n\n### Response:\n")
	return b.String()
}

// excerptHead is the excerpt up to its start marker: the fence, the start
// of file marker when the excerpt starts the file, and the context before
// the region.
func (zetaFormat) excerptHead(in *editInput) string {
	head := "```" + userText(in.path) + "\n"
	if in.window.Start == 0 && !in.partial {
		head += markFileStart + "\n"
	}
	return head + userText(in.text[in.window.Start:in.region.Start])
}

// excerpt is the cursor file's block:
//
//	```{path}
//	[<|start_of_file|>]
//	{context before}<|editable_region_start|>
//	{region to the cursor}<|user_cursor_is_here|>{rest of the region}
//	<|editable_region_end|>{context after}
//	```
func (z zetaFormat) excerpt(in *editInput) string {
	t := in.text
	return z.excerptHead(in) + markRegionStart + "\n" + userText(t[in.region.Start:in.cursor]) + markCursor +
		userText(t[in.cursor:in.region.End]) + "\n" + markRegionEnd + userText(t[in.region.End:in.window.End]) + "\n```"
}

// parse reads Zeta's answer, the excerpt rewritten: the region is what
// lies between the start marker (and the newline after it) and the end
// marker (and the newline before it), the stop string generation ended on
// when it is not in the output. The output must hold one start marker;
// the excerpt before it, when the model repeats it, must be the prompt's
// (the model may change only the region); and the region must be
// finished (the end marker, or the stop on it).
func (z zetaFormat) parse(in *editInput, out string, finish inference.FinishReason) (string, string) {
	out = strings.ReplaceAll(out, markCursor, "")
	if (finish == inference.FinishLength || finish == inference.FinishBudget) && !strings.Contains(out, markRegionEnd) {
		return "", unfinished(finish)
	}
	switch n := strings.Count(out, markRegionStart); {
	case n == 0:
		return "", "the model's output holds no " + markRegionStart + " marker"
	case n > 1:
		return "", "the model's output holds more than one " + markRegionStart + " marker"
	}
	head, rest, _ := strings.Cut(out, markRegionStart)
	if !sameExcerptHead(head, z.excerptHead(in)) {
		return "", "the model changed the excerpt outside the editable region"
	}
	rest = strings.TrimPrefix(rest, "\n")
	region, _, closed := strings.Cut(rest, markRegionEnd)
	if !closed && finish != inference.FinishStopSequence {
		return "", unfinished(finish)
	}
	if strings.Count(rest, markRegionEnd) > 1 {
		return "", "the model's output holds more than one " + markRegionEnd + " marker"
	}
	return modelText(strings.TrimSuffix(region, "\n")), ""
}

// sameExcerptHead reports whether the model's text before the start
// marker repeats the prompt's excerpt head (want): the same lines after
// the fence line (whose path the model may write otherwise), trailing
// white space aside. Nothing at all also passes: the model went straight
// to the region.
func sameExcerptHead(got, want string) bool {
	if strings.TrimSpace(got) == "" {
		return true
	}
	lines := func(s string) []string {
		ls := strings.Split(s, "\n")
		if len(ls) > 0 && strings.HasPrefix(strings.TrimSpace(ls[0]), "```") {
			ls = ls[1:]
		}
		for i := range ls {
			ls[i] = strings.TrimRight(ls[i], " \t\r")
		}
		for len(ls) > 0 && ls[len(ls)-1] == "" {
			ls = ls[:len(ls)-1]
		}
		return ls
	}
	g, w := lines(got), lines(want)
	if len(g) != len(w) {
		return false
	}
	for i := range g {
		if g[i] != w[i] {
			return false
		}
	}
	return true
}

// unfinished says why output cut short holds no whole region.
func unfinished(finish inference.FinishReason) string {
	switch finish {
	case inference.FinishLength:
		return "the output reached max_tokens before the end of the editable region"
	case inference.FinishBudget:
		return "the latency budget ended the output before the end of the editable region"
	}
	return "the model stopped before the end of the editable region"
}

// Instinct (continuedev/instinct; Continue's core/nextEdit).
type instinctFormat struct{}

const instinctSystem = "You are Instinct, an intelligent next-edit predictor developed by Continue.dev. Your role as an AI assistant is to help developers complete their code tasks by predicting the next edit that they will make within the section of code marked by <|editable_region_start|> and <|editable_region_end|> tags.\n\n" +
	"You have access to the following information to help you make informed suggestions:\n\n" +
	"- Context: In the section marked \"### Context\", there are context items from potentially relevant files in the developer's codebase. Each context item consists of a <|context_file|> marker, the filepath, a <|snippet|> marker, and then some content from that file, in that order. Keep in mind that not all of the context information may be relevant to the task, so use your judgement to determine which parts to consider.\n" +
	"- User Edits: In the section marked \"### User Edits:\", there is a record of the most recent changes made to the code, helping you understand the evolution of the code and the developer's intentions. These changes are listed from most recent to least recent. It's possible that some of the edit diff history is entirely irrelevant to the developer's change. The changes are provided in a unified line-diff format, i.e. with pluses and minuses for additions and deletions to the code.\n" +
	"- User Excerpt: In the section marked \"### User Excerpt:\", there is a filepath to the developer's current file, and then an excerpt from that file. The <|editable_region_start|> and <|editable_region_end|> markers are within this excerpt. Your job is to rewrite only this editable region, not the whole excerpt. The excerpt provides additional context on the surroundings of the developer's edit.\n" +
	"- Cursor Position: Within the user excerpt's editable region, the <|user_cursor_is_here|> flag indicates where the developer's cursor is currently located, which can be crucial for understanding what part of the code they are focusing on. Do not produce this marker in your output; simply take it into account.\n\n" +
	"Your task is to predict and complete the changes the developer would have made next in the editable region. The developer may have stopped in the middle of typing. Your goal is to keep the developer on the path that you think they're following. Some examples include further implementing a class, method, or variable, or improving the quality of the code. Make sure the developer doesn't get distracted by ensuring your suggestion is relevant. Consider what changes need to be made next, if any. If you think changes should be made, ask yourself if this is truly what needs to happen. If you are confident about it, then proceed with the changes.\n\n" +
	"# Steps\n\n" +
	"1. **Review Context**: Analyze the context from the resources provided, such as recently viewed snippets, edit history, surrounding code, and cursor location.\n" +
	"2. **Evaluate Current Code**: Determine if the current code within the tags requires any corrections or enhancements.\n" +
	"3. **Suggest Edits**: If changes are required, ensure they align with the developer's patterns and improve code quality.\n" +
	"4. **Maintain Consistency**: Ensure indentation and formatting follow the existing code style.\n\n" +
	"# Output Format\n\n" +
	"- Provide only the revised code within the tags. Do not include the tags in your output.\n" +
	"- Ensure that you do not output duplicate code that exists outside of these tags.\n" +
	"- Avoid undoing or reverting the developer's last change unless there are obvious typos or errors."

const instinctUserPrefix = "Reference the user excerpt, user edits, and the snippets to understand the developer's intent. " +
	"Update the editable region of the user excerpt by predicting and completing the changes they would have made next. " +
	"This may be a deletion, addition, or modification of code."

// Continue's window: the region from one line above the cursor's to five
// below, the excerpt 25 lines each way.
func (instinctFormat) shape() editregion.Shape { return editregion.Instinct }

// <|im_end|> is in the model's stop set already.
func (instinctFormat) stops() []string { return nil }

// render writes the system and user messages in Qwen2.5's chat template:
//
//	<|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n
//	{prefix}\n\n### Context:\n{context}\n\n### User Edits:\n\n{edits, newest first}
//	\n\n### User Excerpt:\n{path}\n\n{excerpt}```\n### Response:<|im_end|>\n<|im_start|>assistant\n
//
// Context sections are "<|context_file|>: {path}\n<|snippet|>\n{text}",
// edits "User edited file \"{path}\"\n\n```diff\n{hunks}\n```", both joined
// by a newline; the excerpt is its lines with the region's between marker
// lines and the cursor marked (the fence after it, with none before, is
// Continue's template).
func (instinctFormat) render(in *editInput) string {
	var b strings.Builder
	b.WriteString("<|im_start|>system\n" + instinctSystem + "<|im_end|>\n<|im_start|>user\n")
	b.WriteString(instinctUserPrefix + "\n\n### Context:\n")
	for i, c := range in.context {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(markContextFile + ": " + userText(c.Path) + "\n" + markSnippet + "\n" +
			neutralMarkers.Replace(strings.TrimSuffix(c.Text, "\n")))
	}
	b.WriteString("\n\n### User Edits:\n\n")
	for i := len(in.edits) - 1; i >= 0; i-- {
		if i < len(in.edits)-1 {
			b.WriteString("\n")
		}
		e := in.edits[i]
		b.WriteString("User edited file \"" + userText(e.Path) + "\"\n\n```diff\n" + userText(instinctDiff(e.Diff)) + "\n```")
	}
	t := in.text
	b.WriteString("\n\n### User Excerpt:\n" + userText(in.path) + "\n\n")
	b.WriteString(userText(t[in.window.Start:in.region.Start]) + markRegionStart + "\n" +
		userText(t[in.region.Start:in.cursor]) + markCursor + userText(t[in.cursor:in.region.End]) + "\n" + markRegionEnd +
		userText(t[in.region.End:in.window.End]))
	b.WriteString("```\n### Response:<|im_end|>\n<|im_start|>assistant\n")
	return b.String()
}

// instinctDiff keeps a diff's hunk lines ("@@", "+", "-", " "), as
// Continue's editHistoryBlock does.
func instinctDiff(d string) string {
	var keep []string
	for _, l := range strings.Split(d, "\n") {
		if strings.HasPrefix(l, "@@") || strings.HasPrefix(l, "+") || strings.HasPrefix(l, "-") || strings.HasPrefix(l, " ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// parse reads Instinct's answer, the region rewritten (no markers): a
// whole answer ends with <|im_end|> (FinishStop); a code fence around it
// and the cursor marker go, and so does one final newline (the region
// ends at a line's end). Markers in the answer mean the model repeated
// the excerpt: its region is then what lies between them. An answer that
// starts with the line before the region, or ends with the line after it,
// where the region itself does not, repeats code outside the region.
func (instinctFormat) parse(in *editInput, out string, finish inference.FinishReason) (string, string) {
	if finish != inference.FinishStop && finish != inference.FinishStopSequence {
		return "", unfinished(finish)
	}
	if strings.Contains(out, markRegionStart) || strings.Contains(out, markRegionEnd) {
		if strings.Count(out, markRegionStart) > 1 || strings.Count(out, markRegionEnd) > 1 {
			return "", "the model's output holds more than one editable region marker"
		}
		if _, after, ok := strings.Cut(out, markRegionStart); ok {
			out = strings.TrimPrefix(after, "\n")
		}
		out, _, _ = strings.Cut(out, markRegionEnd)
	}
	out = strings.ReplaceAll(out, markCursor, "")
	if body, ok := strings.CutPrefix(strings.TrimLeft(out, "\n"), "```"); ok {
		if nl := strings.IndexByte(body, '\n'); nl >= 0 {
			if inner, ok := strings.CutSuffix(strings.TrimRight(body[nl+1:], "\n"), "```"); ok {
				out = inner
			}
		}
	}
	out = modelText(strings.TrimSuffix(out, "\n"))
	old := in.text[in.region.Start:in.region.End]
	if before := lineBefore(in.text, in.region.Start); before != "" && strings.HasPrefix(out, before+"\n") && !strings.HasPrefix(old, before+"\n") {
		return "", "the model repeated the code before the editable region"
	}
	if after := lineAfter(in.text, in.region.End); after != "" && strings.HasSuffix(out, "\n"+after) && !strings.HasSuffix(old, "\n"+after) {
		return "", "the model repeated the code after the editable region"
	}
	return out, ""
}

// lineBefore is the last non-blank line before the line starting at off
// ("" when there is none).
func lineBefore(text string, off int) string {
	for end := off - 1; end >= 0; {
		start := strings.LastIndexByte(text[:end], '\n') + 1
		if l := text[start:end]; strings.TrimSpace(l) != "" {
			return l
		}
		end = start - 1
	}
	return ""
}

// lineAfter is the first non-blank line after the line ending at off.
func lineAfter(text string, off int) string {
	for start := off + 1; start <= len(text) && off < len(text); {
		end := strings.IndexByte(text[start:], '\n')
		if end < 0 {
			end = len(text) - start
		}
		if l := text[start : start+end]; strings.TrimSpace(l) != "" {
			return l
		}
		start += end + 1
	}
	return ""
}
