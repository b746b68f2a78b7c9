package contextpack

import (
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string // in the error
	}{
		{"tail negative", func(c *Config) { c.SimilarTailLines = -1 }, "SimilarTailLines -1"},
		{"tail over ten windows", func(c *Config) { c.SimilarTailLines = 10*c.WindowLines + 1 }, "SimilarTailLines 201"},
		{"stride over window", func(c *Config) { c.WindowStride = c.WindowLines + 1 }, "WindowStride"},
		{"diversity", func(c *Config) { c.Diversity = 11 }, "Diversity"},
		{"off-topic weight", func(c *Config) { c.OffTopicWeight = 1.5 }, "OffTopicWeight"},
		{"window lines", func(c *Config) { c.WindowLines = 0 }, "WindowLines 0"},
	} {
		c := DefaultConfig()
		tc.set(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	c := DefaultConfig()
	c.SimilarTailLines = 0 // the matched window alone
	if err := c.Validate(); err != nil {
		t.Errorf("SimilarTailLines 0: %v", err)
	}
}
