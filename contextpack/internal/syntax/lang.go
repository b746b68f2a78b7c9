package syntax

import (
	"fmt"
	"path"
	"strings"
)

// Lang identifies a supported language; LangPlain is everything else.
type Lang uint8

const (
	LangPlain Lang = iota
	LangPython
	LangGo
	LangJS
	LangTS
	LangTSX
	LangJava
	LangRust
	LangC
	LangCPP
	NumLangs
)

var langNames = [NumLangs]string{"plain", "python", "go", "javascript", "typescript", "tsx", "java", "rust", "c", "cpp"}

func (l Lang) String() string {
	if l < NumLangs {
		return langNames[l]
	}
	return fmt.Sprintf("langID(%d)", int(l))
}

// languageIDs maps request language names (LSP language identifiers and
// common aliases) to languages.
var languageIDs = map[string]Lang{
	"python": LangPython, "py": LangPython,
	"go": LangGo, "golang": LangGo,
	"javascript": LangJS, "js": LangJS, "javascriptreact": LangJS, "jsx": LangJS,
	"typescript": LangTS, "ts": LangTS,
	"typescriptreact": LangTSX, "tsx": LangTSX,
	"java": LangJava,
	"rust": LangRust, "rs": LangRust,
	"c":   LangC,
	"cpp": LangCPP, "c++": LangCPP, "cuda-cpp": LangCPP, "objective-cpp": LangCPP,
	"plaintext": LangPlain, "plain": LangPlain, "text": LangPlain,
}

var extLangs = map[string]Lang{
	".py": LangPython, ".pyi": LangPython, ".pyw": LangPython,
	".go": LangGo,
	".js": LangJS, ".mjs": LangJS, ".cjs": LangJS, ".jsx": LangJS,
	".ts": LangTS, ".mts": LangTS, ".cts": LangTS,
	".tsx":  LangTSX,
	".java": LangJava,
	".rs":   LangRust,
	".c":    LangC, ".h": LangC,
	".cc": LangCPP, ".cpp": LangCPP, ".cxx": LangCPP, ".c++": LangCPP, ".hh": LangCPP, ".hpp": LangCPP,
	".hxx": LangCPP, ".h++": LangCPP, ".ipp": LangCPP, ".tpp": LangCPP, ".cu": LangCPP, ".cuh": LangCPP,
}

// DetectLang picks the language from the request's language name, else
// from the file extension; anything unknown is plain text.
func DetectLang(p, language string) Lang {
	if language != "" {
		if l, ok := languageIDs[strings.ToLower(language)]; ok {
			return l
		}
	}
	if l, ok := extLangs[strings.ToLower(path.Ext(p))]; ok {
		return l
	}
	return LangPlain
}
