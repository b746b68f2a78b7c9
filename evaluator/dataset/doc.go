// Package dataset owns the benchmark loaders of the evaluator: the four
// HumanEval infilling sets, ExecRepoBench's JSON lines plus repositories
// directory, and infill's own repository-benchmark format (which it can also
// write, for evaluator/masking). Every loader returns evaluator.Tasks ready
// for the Runner and rejects bad input with errors wrapping ErrInvalidData.
package dataset

import "github.com/infill-dev/infill/internal/errkind"

// ErrInvalidData wraps every malformed-input error of the loaders.
var ErrInvalidData = errkind.New(errkind.FailedPrecondition, "dataset: invalid data")
