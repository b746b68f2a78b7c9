package cli

// ReadResults lets the external end-to-end tests (package cli_test) use the
// same strict results-file reader as the internal tests.
var ReadResults = readLines

// Outcomes and SameOutcomes compare the results files of two runs.
var (
	Outcomes     = outcomes
	SameOutcomes = sameOutcomes
)
