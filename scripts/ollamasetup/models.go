package main

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/ollama/ollama/api"
	"github.com/ollama/ollama/envconfig"
)

// tinyName is the tiny random-weight test model's own name
// (scripts/backend.sh creates it so).
const tinyName = "infill-tiny"

// ollamaURL is the URL the ollama CLI uses for OLLAMA_HOST=value (Ollama's
// own parsing: scheme http, host 127.0.0.1, port 11434 by default), with a
// wildcard bind address (0.0.0.0, ::) turned into the loopback address a
// client connects to.
func ollamaURL(value string) string {
	old, had := os.LookupEnv("OLLAMA_HOST")
	os.Setenv("OLLAMA_HOST", value)
	u := envconfig.Host()
	if had {
		os.Setenv("OLLAMA_HOST", old)
	} else {
		os.Unsetenv("OLLAMA_HOST")
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err == nil {
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			if ip.To4() != nil {
				host = "127.0.0.1"
			} else {
				host = "::1"
			}
			u.Host = net.JoinHostPort(host, port)
		}
	}
	return u.String()
}

// isTiny reports whether a listed model is infill's tiny random-weight
// model, whatever its name: family qwen2 with under 100 million parameters
// (it has 19.49M; the smallest Qwen2.5-Coder, 0.5B, has 494M). size is the
// parameter size as Ollama prints it ("19.49M", "1.5B", "494.03M").
func isTiny(family, size string) bool {
	if !strings.EqualFold(family, "qwen2") {
		return false
	}
	n, ok := parameters(size)
	return ok && n < 100e6
}

// parameters reads a parameter size as Ollama prints it: a number with a
// K, M, B or T suffix, or a plain count.
func parameters(size string) (float64, bool) {
	s := strings.TrimSpace(size)
	if s == "" {
		return 0, false
	}
	scale := 1.0
	switch strings.ToUpper(s[len(s)-1:]) {
	case "K":
		scale = 1e3
	case "M":
		scale = 1e6
	case "B":
		scale = 1e9
	case "T":
		scale = 1e12
	}
	if scale != 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, false
	}
	return n * scale, true
}

// sameModel reports whether two of Ollama's model names are one (a name
// without a tag is ":latest"; case does not matter).
func sameModel(a, b string) bool {
	norm := func(s string) string {
		s = strings.ToLower(s)
		if !strings.Contains(s[strings.LastIndex(s, "/")+1:], ":") {
			s += ":latest"
		}
		return s
	}
	return a != "" && norm(a) == norm(b)
}

// isBase reports whether name is a Qwen2.5-Coder base model's (the
// fill-in-the-middle models of Ollama's library: qwen2.5-coder:1.5b-base).
func isBase(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "qwen2.5-coder") && strings.Contains(n, "-base")
}

// fakes are the listed copies of the tiny model under another name than
// its own (an older scripts/run.sh made them as the --model asked for).
func fakes(models []api.ListModelResponse) []string {
	var out []string
	for _, m := range models {
		if isTiny(m.Details.Family, m.Details.ParameterSize) && !sameModel(m.Name, tinyName) {
			out = append(out, m.Name)
		}
	}
	return out
}

// choice is what find makes of an Ollama's model list.
type choice struct {
	model    string   // the model to serve, "" when none
	warnings []string // the tiny model under real names, said to the user
	code     int      // exit status: 0, 2 (no such model) or 3 (the model asked for is the tiny one)
	why      string   // when code is not 0
}

// choose picks from an Ollama's model list (most recently changed first, as
// /api/tags lists them): exactly the model want names, or without want the
// first Qwen2.5-Coder base model that is not the tiny model under its name.
// The tiny model under a real model's name is named in a warning (only the
// one asked for, when want names one) and refused when asked for.
func choose(url, want string, models []api.ListModelResponse) choice {
	var c choice
	var listed []string
	picked := ""
	for _, m := range models {
		listed = append(listed, m.Name)
		tiny := isTiny(m.Details.Family, m.Details.ParameterSize)
		if want != "" {
			if sameModel(m.Name, want) {
				c.model, picked = want, m.Name
			}
		} else if c.model == "" && isBase(m.Name) && !tiny {
			c.model = m.Name
		}
	}
	refused := false
	for _, f := range fakes(models) {
		if want != "" && f != picked {
			continue
		}
		c.warnings = append(c.warnings, fmt.Sprintf("the Ollama at %s has %s, but that is infill's tiny random-weight test model "+
			"under a real model's name (family qwen2, under 100M parameters; an older scripts/run.sh made it): it completes with "+
			"gibberish. Remove it there (OLLAMA_HOST=%s ollama rm %s) and pull the real model (ollama pull %s)", url, f, url, f, f))
		refused = refused || (want != "" && f == picked)
	}
	has := strings.Join(listed, " ")
	if has == "" {
		has = "nothing"
	}
	switch {
	case refused:
		c.model, c.code, c.why = "", 3, fmt.Sprintf("refusing %s at %s: it is the tiny random-weight model (above)", want, url)
	case c.model == "" && want != "":
		c.code, c.why = 2, fmt.Sprintf("the Ollama at %s has no model %s; it has: %s", url, want, has)
	case c.model == "":
		c.code, c.why = 2, fmt.Sprintf("the Ollama at %s has no Qwen2.5-Coder base model (fill-in-the-middle needs one, "+
			"e.g. qwen2.5-coder:1.5b-base); it has: %s", url, has)
	}
	return c
}

// progressLine is a pull's progress as the user sees it: Ollama's status,
// and for a download its share and size.
func progressLine(p api.ProgressResponse) string {
	s := p.Status
	if p.Total > 0 {
		s += fmt.Sprintf(" %d%% of %d MB", p.Completed*100/p.Total, p.Total/1000000)
	}
	return s
}
