package main

import (
	"strings"
	"testing"

	"github.com/ollama/ollama/api"
)

func TestOllamaURL(t *testing.T) {
	for in, want := range map[string]string{
		"":                        "http://127.0.0.1:11434",
		"127.0.0.1:11435":         "http://127.0.0.1:11435",
		"0.0.0.0:11435":           "http://127.0.0.1:11435",
		"0.0.0.0":                 "http://127.0.0.1:11434",
		"[::]:8080":               "http://[::1]:8080",
		"gpu1":                    "http://gpu1:11434",
		"http://gpu1":             "http://gpu1:80",
		"https://gpu1":            "https://gpu1:443",
		"https://gpu1:8443":       "https://gpu1:8443",
		" http://10.0.0.2:11434 ": "http://10.0.0.2:11434",
		"[::1]:11434":             "http://[::1]:11434",
	} {
		if got := ollamaURL(in); got != want {
			t.Errorf("ollamaURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestIsTiny(t *testing.T) {
	for _, c := range []struct {
		family, size string
		want         bool
	}{
		{"qwen2", "19.49M", true},
		{"Qwen2", "19.49M", true},
		{"qwen2", "99.9M", true},
		{"qwen2", "100M", false},
		{"qwen2", "494.03M", false},
		{"qwen2", "1.5B", false},
		{"qwen2", "7.62B", false},
		{"qwen2", "800K", true},
		{"qwen2", "19490000", true},
		{"qwen2", "", false},
		{"qwen2", "big", false},
		{"llama", "19.49M", false},
		{"", "19.49M", false},
	} {
		if got := isTiny(c.family, c.size); got != c.want {
			t.Errorf("isTiny(%q, %q) = %v, want %v", c.family, c.size, got, c.want)
		}
	}
}

func TestSameModel(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"infill-tiny:latest", "infill-tiny", true},
		{"infill-tiny", "INFILL-TINY:latest", true},
		{"qwen2.5-coder:1.5b-base", "qwen2.5-coder:1.5b-base", true},
		{"qwen2.5-coder:1.5b-base", "qwen2.5-coder", false},
		{"127.0.0.1:5000/library/m:latest", "127.0.0.1:5000/library/m", true},
		{"", "", false},
	} {
		if got := sameModel(c.a, c.b); got != c.want {
			t.Errorf("sameModel(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func model(name, family, size string) api.ListModelResponse {
	return api.ListModelResponse{Name: name, Model: name, Details: api.ModelDetails{Family: family, ParameterSize: size}}
}

// TestChoose: the cases scripts/setup_test.go's TestFindOllama makes with a
// real Ollama, and the ones it cannot (an order of listing, a model named
// only by family).
func TestChoose(t *testing.T) {
	const u = "http://127.0.0.1:11434"
	listed := []api.ListModelResponse{
		model("qwen2.5-coder:1.5b-base", "qwen2", "19.49M"), // the tiny model under a real name
		model("qwen2.5-coder:7b-instruct", "qwen2", "7.62B"),
		model("qwen2.5-coder:0.5b-base", "qwen2", "494.03M"),
		model("qwen2.5-coder:3b-base", "qwen2", "3.09B"),
		model("infill-tiny:latest", "qwen2", "19.49M"),
	}
	for _, c := range []struct {
		name, want string
		models     []api.ListModelResponse
		model      string
		code       int
		why, warns string
	}{
		{name: "the first base model that is real", models: listed, model: "qwen2.5-coder:0.5b-base",
			warns: "has qwen2.5-coder:1.5b-base, but that is infill's tiny random-weight test model"},
		{name: "exactly the model asked for", want: "qwen2.5-coder:3b-base", models: listed, model: "qwen2.5-coder:3b-base"},
		{name: "the tiny model by its own name", want: "infill-tiny", models: listed, model: "infill-tiny"},
		{name: "an instruct model when asked for", want: "qwen2.5-coder:7b-instruct", models: listed, model: "qwen2.5-coder:7b-instruct"},
		{name: "a model it lacks", want: "qwen2.5-coder:32b-base", models: listed, code: 2, why: "has no model qwen2.5-coder:32b-base; it has: qwen2.5-coder:1.5b-base"},
		{name: "the tiny model under the name asked for", want: "qwen2.5-coder:1.5b-base", models: listed, code: 3,
			why: "refusing qwen2.5-coder:1.5b-base", warns: "ollama rm qwen2.5-coder:1.5b-base"},
		{name: "only the tiny model under a base name", models: listed[:1], code: 2, why: "has no Qwen2.5-Coder base model"},
		{name: "nothing", models: nil, code: 2, why: "it has: nothing"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := choose(u, c.want, c.models)
			if got.model != c.model || got.code != c.code || !strings.Contains(got.why, c.why) ||
				!strings.Contains(strings.Join(got.warnings, "\n"), c.warns) {
				t.Errorf("choose: %+v; want model %q, code %d, why %q, a warning saying %q", got, c.model, c.code, c.why, c.warns)
			}
			if c.want != "" && c.want != "qwen2.5-coder:1.5b-base" && len(got.warnings) != 0 {
				t.Errorf("warnings %q about models not asked for", got.warnings)
			}
		})
	}
	if got := fakes(listed); len(got) != 1 || got[0] != "qwen2.5-coder:1.5b-base" {
		t.Errorf("fakes = %q, want the tiny model's copy only", got)
	}
}

func TestProgressLine(t *testing.T) {
	for _, c := range []struct {
		p    api.ProgressResponse
		want string
	}{
		{api.ProgressResponse{Status: "pulling manifest"}, "pulling manifest"},
		{api.ProgressResponse{Status: "pulling 29d8c98fa6b0", Total: 986000000, Completed: 493000000}, "pulling 29d8c98fa6b0 50% of 986 MB"},
	} {
		if got := progressLine(c.p); got != c.want {
			t.Errorf("progressLine(%+v) = %q, want %q", c.p, got, c.want)
		}
	}
}
