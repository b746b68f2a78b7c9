// Package fuzz holds no Go code of its own: run.sh beside it runs every fuzz
// target of the module for a fixed time. Its test runs it on one target for
// a second and checks the report.
package fuzz
