//go:build !unix

package evaluator

import "os"

// lockFile is a no-op where flock does not exist: one run per journal is
// then the caller's to ensure.
func lockFile(*os.File) error { return nil }
