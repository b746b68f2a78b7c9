package cli

// ReadResults lets the external end-to-end tests (package cli_test) use the
// same strict results-file reader as the internal tests.
var ReadResults = readLines
