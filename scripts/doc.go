// Package scripts holds no Go code of its own: its tests drive the shell
// entry points beside it (setup.sh, run.sh, backend.sh) against the real
// Ollama backend, so that README's set-up commands are checked by
// scripts/test.sh like everything else.
package scripts
