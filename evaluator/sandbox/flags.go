package sandbox

import (
	"fmt"
	"strconv"
)

// LimitFlags are the command-line flags of a sandbox's resource limits
// (--sandbox-memory, --sandbox-address-space, --sandbox-processes,
// --sandbox-file-size), defined once for every command that starts a
// sandbox: Defs lists them for the standard library's flag package and for
// spf13/pflag alike (their Values satisfy both), Apply sets a Config.
type LimitFlags struct {
	Memory, AddressSpace, FileSize ByteSize
	Processes                      Count
}

// FlagValue is a flag's value as both flag.Value and pflag.Value see it.
type FlagValue interface {
	String() string
	Set(string) error
	Type() string
}

// FlagDef is one flag: register it with FlagSet.Var(Value, Name, Usage).
type FlagDef struct {
	Name, Usage string
	Value       FlagValue
}

// Defs returns the flags; scope prefixes each usage ("with --local: ").
func (f *LimitFlags) Defs(scope string) []FlagDef {
	return []FlagDef{
		{"sandbox-memory", scope + "memory each process of a test run may write to (RLIMIT_DATA: heap, thread stacks), e.g. 8GiB (default " + FormatBytes(DefaultMemoryBytes) + ")", &f.Memory},
		{"sandbox-address-space", scope + "address space per process (RLIMIT_AS), a backstop for shared memory (default 4 × --sandbox-memory)", &f.AddressSpace},
		{"sandbox-processes", fmt.Sprintf("%sprocesses and threads of a test run at once (default %d)", scope, DefaultProcesses), &f.Processes},
		{"sandbox-file-size", scope + "largest file a test run may write (default " + FormatBytes(DefaultFileSizeBytes) + ")", &f.FileSize},
	}
}

// Apply sets c's limits from the flags given (zero: the default).
func (f *LimitFlags) Apply(c *Config) {
	c.MemoryBytes = int64(f.Memory)
	c.AddressSpaceBytes = int64(f.AddressSpace)
	c.Processes = int(f.Processes)
	c.FileSizeBytes = int64(f.FileSize)
}

// ByteSize is a flag holding a size in bytes: "512MiB", "4GiB", "2G"
// (binary units: K, M, G, T, with or without "iB"/"B"), or a plain number
// of bytes (ParseBytes).
type ByteSize int64

func (b *ByteSize) String() string {
	if *b == 0 {
		return ""
	}
	return FormatBytes(int64(*b))
}

// Type names the value in usage lines.
func (b *ByteSize) Type() string { return "size" }

// Set parses s.
func (b *ByteSize) Set(s string) error {
	n, err := ParseBytes(s)
	if err != nil {
		return err
	}
	*b = ByteSize(n)
	return nil
}

// Count is a flag holding a non-negative count (0: the default).
type Count int

func (c *Count) String() string { return strconv.Itoa(int(*c)) }

// Type names the value in usage lines.
func (c *Count) Type() string { return "int" }

// Set parses s.
func (c *Count) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("%q is not a count", s)
	}
	*c = Count(n)
	return nil
}
