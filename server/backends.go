package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"go.yaml.in/yaml/v3"

	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/server/pipeline"
)

// Backend kinds.
const (
	// KindOllama is Ollama's native API (/api/generate).
	KindOllama = "ollama"
	// KindOpenAI is OpenAI's /v1/completions with a raw prompt: vLLM,
	// SGLang, llama.cpp's server, Ollama's own /v1.
	KindOpenAI = "openai"
)

// BackendConfig describes one backend (--backend, repeatable, or
// --backends FILE). Zero values take the server-wide settings.
type BackendConfig struct {
	// Name identifies it in health (infill.backend/NAME), metrics and
	// logs; default: the URL's host:port.
	Name string `json:"name,omitempty" yaml:"name"`
	// Kind is KindOllama (default) or KindOpenAI.
	Kind string `json:"kind,omitempty" yaml:"kind"`
	// URL is the server's base URL.
	URL string `json:"url" yaml:"url"`
	// Models it serves, each "NAME" or "NAME=SERVED" (SERVED: the name the
	// backend knows it by, e.g. vLLM's Hugging Face id); empty: every model.
	Models []string `json:"models,omitempty" yaml:"models"`
	// ContextTokens is its context: num_ctx sent to Ollama, the context an
	// openai server was started with (e.g. vLLM's --max-model-len); 0:
	// Inference.ContextTokens.
	ContextTokens int `json:"num_ctx,omitempty" yaml:"num_ctx"`
	// Slots are the generations sent to it at once (its parallelism); 0:
	// Admission.Slots.
	Slots int `json:"slots,omitempty" yaml:"slots"`
	// QueueLength bounds the requests waiting for its slots, per class;
	// beyond it a request goes to the next backend. 0: Admission.QueueLength.
	QueueLength int `json:"queue,omitempty" yaml:"queue"`
	// TokenFile holds a bearer token sent with every request to it (read
	// at start); empty: none.
	TokenFile string `json:"token_file,omitempty" yaml:"token_file"`
}

// DefaultBackendName names the backend of a configuration without
// Backends (the one --ollama-url gives).
const DefaultBackendName = pipeline.DefaultTarget

// backendName is what a name may be: it appears in a gRPC health service
// name and a metric label.
var backendName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`)

// EffectiveBackends returns the backends with the server-wide settings
// filled in: Backends, or without any the one Ollama at Inference.URL.
func (c Config) EffectiveBackends() []BackendConfig {
	bs := slices.Clone(c.Backends)
	if len(bs) == 0 {
		bs = []BackendConfig{{Name: DefaultBackendName, Kind: KindOllama, URL: c.Inference.URL}}
	}
	for i := range bs {
		b := &bs[i]
		if b.Kind == "" {
			b.Kind = KindOllama
		}
		if b.Name == "" {
			if u, err := url.Parse(b.URL); err == nil {
				b.Name = u.Host
			}
		}
		if b.ContextTokens == 0 {
			b.ContextTokens = c.Inference.ContextTokens
		}
		if b.Slots == 0 {
			b.Slots = c.Admission.Slots
		}
		if b.QueueLength == 0 {
			b.QueueLength = c.Admission.QueueLength
		}
	}
	return bs
}

// models splits Models into the names requests use and the names the
// backend serves them under.
func (b BackendConfig) models() (names []string, served map[string]string) {
	for _, m := range b.Models {
		name, as, ok := strings.Cut(m, "=")
		names = append(names, name)
		if ok {
			if served == nil {
				served = map[string]string{}
			}
			served[name] = as
		}
	}
	return names, served
}

// validateBackends reports backends that cannot work; need is the least
// context that leaves a prompt after the default generation.
func (c Config) validateBackends(need int) error {
	var errs []error
	names := map[string]bool{}
	defaultServed := false
	for i, b := range c.EffectiveBackends() {
		what := fmt.Sprintf("backend %d (%s)", i+1, b.Name)
		if !backendName.MatchString(b.Name) {
			errs = append(errs, fmt.Errorf("%s: name %q: want 1 to 64 of A-Z a-z 0-9 . _ : - (starting with a letter or digit)", what, b.Name))
		}
		if names[b.Name] {
			errs = append(errs, fmt.Errorf("%s: name %q given twice", what, b.Name))
		}
		names[b.Name] = true
		if b.Kind != KindOllama && b.Kind != KindOpenAI {
			errs = append(errs, fmt.Errorf("%s: kind %q: want %s or %s", what, b.Kind, KindOllama, KindOpenAI))
		}
		if u, err := url.Parse(b.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("%s: url %q is not an http(s) URL", what, b.URL))
		}
		if b.ContextTokens < need {
			errs = append(errs, fmt.Errorf("%s: a context of %d tokens leaves no prompt after %d default max tokens (need at least %d)",
				what, b.ContextTokens, c.Inference.DefaultMaxTokens, need))
		}
		if b.Slots < 0 || b.QueueLength < 0 {
			errs = append(errs, fmt.Errorf("%s: slots and queue must be >= 0", what))
		}
		models, _ := b.models()
		for _, m := range models {
			if m == "" {
				errs = append(errs, fmt.Errorf("%s: an empty model name", what))
			}
		}
		if len(models) == 0 || slices.Contains(models, c.Inference.DefaultModel) {
			defaultServed = true
		}
	}
	if !defaultServed {
		errs = append(errs, fmt.Errorf("no backend serves the default model %q (--model): add it to a backend's models", c.Inference.DefaultModel))
	}
	return errors.Join(errs...)
}

// inferenceConfig is the inference configuration of backend b.
func (c Config) inferenceConfig(b BackendConfig) (inference.Config, error) {
	ic := c.Inference
	ic.URL, ic.ContextTokens = b.URL, b.ContextTokens
	_, ic.ServedNames = b.models()
	if b.TokenFile != "" {
		data, err := os.ReadFile(b.TokenFile)
		if err != nil {
			return ic, fmt.Errorf("backend %s: token_file: %w", b.Name, err)
		}
		if ic.Token = strings.TrimSpace(string(data)); ic.Token == "" || strings.ContainsAny(ic.Token, "\r\n") {
			return ic, fmt.Errorf("backend %s: token_file %s: want one line with the token", b.Name, b.TokenFile)
		}
	}
	return ic, nil
}

// OpenBackends makes a client for every backend of cfg (EffectiveBackends),
// by name, for Deps.Backends.
func OpenBackends(cfg Config, log *zap.Logger) (map[string]Backend, error) {
	if log == nil {
		log = zap.NewNop()
	}
	out := map[string]Backend{}
	for _, b := range cfg.EffectiveBackends() {
		ic, err := cfg.inferenceConfig(b)
		if err != nil {
			return nil, err
		}
		l := log.Named("inference").With(zap.String("backend", b.Name))
		var be Backend
		switch b.Kind {
		case KindOpenAI:
			be, err = inference.NewOpenAI(ic, l)
		default:
			be, err = inference.NewOllama(ic, l)
		}
		if err != nil {
			return nil, fmt.Errorf("backend %s: %w", b.Name, err)
		}
		out[b.Name] = be
	}
	return out, nil
}

// targets are the pipeline's backends: EffectiveBackends with their
// clients from deps (Backends by name, or Backend for a single one).
func (c Config) targets(deps Deps) ([]pipeline.Target, error) {
	bs := c.EffectiveBackends()
	var ts []pipeline.Target
	for _, b := range bs {
		be := deps.Backends[b.Name]
		if be == nil && len(bs) == 1 {
			be = deps.Backend
		}
		if be == nil {
			return nil, fmt.Errorf("server: no client for backend %q (Deps.Backends)", b.Name)
		}
		adm := c.Admission
		adm.Slots, adm.QueueLength = b.Slots, b.QueueLength
		models, _ := b.models()
		ts = append(ts, pipeline.Target{Name: b.Name, Backend: be, Admission: adm, Models: models})
	}
	return ts, nil
}

// ParseBackend reads a --backend value: comma-separated KEY=VALUE pairs,
// keys kind, url, name, models (repeatable; NAME or NAME=SERVED), num_ctx,
// slots, queue and token_file, e.g.
// "kind=openai,url=http://gpu1:8000,models=qwen2.5-coder:1.5b-base=Qwen/Qwen2.5-Coder-1.5B,num_ctx=8192,slots=4".
func ParseBackend(s string) (BackendConfig, error) {
	var b BackendConfig
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return b, fmt.Errorf("%q: want KEY=VALUE", kv)
		}
		num := func(dst *int) error {
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return fmt.Errorf("%s=%q: want a whole number >= 0", k, v)
			}
			*dst = n
			return nil
		}
		var err error
		switch k {
		case "kind":
			b.Kind = v
		case "url":
			b.URL = v
		case "name":
			b.Name = v
		case "model", "models":
			b.Models = append(b.Models, v)
		case "num_ctx":
			err = num(&b.ContextTokens)
		case "slots":
			err = num(&b.Slots)
		case "queue":
			err = num(&b.QueueLength)
		case "token_file":
			b.TokenFile = v
		default:
			err = fmt.Errorf("unknown key %q (want kind, url, name, models, num_ctx, slots, queue, token_file)", k)
		}
		if err != nil {
			return b, err
		}
	}
	if b.URL == "" {
		return b, fmt.Errorf("%q: url= is required", s)
	}
	return b, nil
}

// backendsFile is the --backends file: {"backends": [...]}.
type backendsFile struct {
	Backends []BackendConfig `json:"backends" yaml:"backends"`
}

// LoadBackends reads a --backends file: JSON (a .json name) or YAML, an
// object whose "backends" lists BackendConfig's fields (name, kind, url,
// models, num_ctx, slots, queue, token_file). A relative token_file is
// relative to the file. Unknown fields are errors.
func LoadBackends(path string) ([]BackendConfig, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f backendsFile
	if strings.EqualFold(filepath.Ext(path), ".json") {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		err = dec.Decode(&f)
	} else {
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		err = dec.Decode(&f)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(f.Backends) == 0 {
		return nil, fmt.Errorf("%s: no backends listed (want an object with a \"backends\" list)", path)
	}
	for i := range f.Backends {
		if t := f.Backends[i].TokenFile; t != "" && !filepath.IsAbs(t) {
			f.Backends[i].TokenFile = filepath.Join(filepath.Dir(path), t)
		}
	}
	return f.Backends, nil
}
