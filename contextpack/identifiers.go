package contextpack

import "github.com/infill-dev/infill/contextpack/internal/syntax"

// Identifiers returns the distinct identifiers of text as the assembler
// sees them (keywords of the language named by path or language excluded),
// in order of first appearance. The quality tool uses it so that its metric
// and the retrieval agree on what an identifier is.
func Identifiers(text, path, language string) []string {
	lang := syntax.DetectLang(path, language)
	seen := map[string]bool{}
	var out []string
	syntax.ScanIdents(text, lang, func(id string, _ int) bool {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
		return true
	})
	return out
}
