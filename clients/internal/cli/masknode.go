package cli

import (
	"github.com/infill-dev/infill/evaluator"
	"github.com/infill-dev/infill/evaluator/masking"
)

// nodeTestSpec is the test of --node-test ARGS or --vitest ARGS
// (evaluator.NodeTestSpec).
func nodeTestSpec(nodeTest, vitest string, expected int) *evaluator.TestSpec {
	return evaluator.NodeTestSpec(nodeTest, vitest, expected)
}

// languageTitle is a language's name in prose.
func languageTitle(name string) string { return masking.LanguageTitle(name) }
