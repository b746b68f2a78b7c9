package server

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/infill-dev/infill/inference"
)

func TestParseBackend(t *testing.T) {
	t.Parallel()
	b, err := ParseBackend("kind=openai,url=http://gpu1:8000/v1,name=vllm-1,models=qwen2.5-coder:1.5b-base=Qwen/Qwen2.5-Coder-1.5B," +
		"model=other,num_ctx=16384,slots=4,queue=8,token_file=/etc/infill/vllm.token")
	if err != nil {
		t.Fatal(err)
	}
	want := BackendConfig{Name: "vllm-1", Kind: KindOpenAI, URL: "http://gpu1:8000/v1",
		Models: []string{"qwen2.5-coder:1.5b-base=Qwen/Qwen2.5-Coder-1.5B", "other"}, ContextTokens: 16384, Slots: 4,
		QueueLength: 8, TokenFile: "/etc/infill/vllm.token"}
	if !reflect.DeepEqual(b, want) {
		t.Fatalf("got %+v\nwant %+v", b, want)
	}
	names, served := b.models()
	if !reflect.DeepEqual(names, []string{"qwen2.5-coder:1.5b-base", "other"}) || served["qwen2.5-coder:1.5b-base"] != "Qwen/Qwen2.5-Coder-1.5B" || len(served) != 1 {
		t.Fatalf("models %v, served as %v", names, served)
	}
	for _, bad := range []string{"", "kind=openai", "url=http://x,slots=-1", "url=http://x,num_ctx=many", "url=http://x,colour=blue", "url"} {
		if _, err := ParseBackend(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestLoadBackends(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	yml := filepath.Join(dir, "backends.yaml")
	os.WriteFile(yml, []byte(`backends:
  - name: gpu0
    url: http://gpu0:11434
    num_ctx: 8192
    slots: 2
  - name: vllm
    kind: openai
    url: http://vllm:8000
    models: ["qwen2.5-coder:1.5b-base=Qwen/Qwen2.5-Coder-1.5B"]
    token_file: vllm.token
`), 0o644)
	bs, err := LoadBackends(yml)
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 2 || bs[0].Slots != 2 || bs[1].Kind != KindOpenAI || bs[1].TokenFile != filepath.Join(dir, "vllm.token") {
		t.Fatalf("%+v", bs)
	}
	js := filepath.Join(dir, "backends.json")
	os.WriteFile(js, []byte(`{"backends": [{"url": "http://a:1", "num_ctx": 4096}]}`), 0o644)
	if bs, err := LoadBackends(js); err != nil || len(bs) != 1 || bs[0].ContextTokens != 4096 {
		t.Fatalf("%+v, %v", bs, err)
	}
	for name, text := range map[string]string{
		"unknown.yaml": "backends:\n  - url: http://a:1\n    slot: 2\n",
		"unknown.json": `{"backends": [{"url": "http://a:1", "slot": 2}]}`,
		"empty.yaml":   "backends: []\n",
		"list.yaml":    "- url: http://a:1\n",
		"broken.json":  `{"backends": [`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o644)
		if _, err := LoadBackends(p); err == nil {
			t.Errorf("%s accepted", name)
		}
	}
}

func TestEffectiveBackends(t *testing.T) {
	t.Parallel()
	c := DefaultConfig()
	c.Inference.URL = "http://ollama:11434"
	bs := c.EffectiveBackends()
	if len(bs) != 1 || bs[0].Name != DefaultBackendName || bs[0].URL != c.Inference.URL || bs[0].Kind != KindOllama ||
		bs[0].Slots != c.Admission.Slots || bs[0].ContextTokens != c.Inference.ContextTokens {
		t.Fatalf("%+v", bs)
	}
	c.Backends = []BackendConfig{{URL: "http://gpu0:11434"}, {Name: "v", Kind: KindOpenAI, URL: "http://v:8000", Slots: 8, ContextTokens: 2048}}
	bs = c.EffectiveBackends()
	if bs[0].Name != "gpu0:11434" || bs[0].QueueLength != c.Admission.QueueLength || bs[1].Slots != 8 || bs[1].ContextTokens != 2048 {
		t.Fatalf("%+v", bs)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*Config){
		"same name":       func(c *Config) { c.Backends[1].Name = "gpu0:11434" },
		"bad name":        func(c *Config) { c.Backends[1].Name = "a b" },
		"bad kind":        func(c *Config) { c.Backends[1].Kind = "vllm" },
		"bad url":         func(c *Config) { c.Backends[1].URL = "gpu1:8000" },
		"tiny context":    func(c *Config) { c.Backends[1].ContextTokens = 100 },
		"default model":   func(c *Config) { c.Backends[0].Models, c.Backends[1].Models = []string{"a"}, []string{"b"} },
		"empty model":     func(c *Config) { c.Backends[0].Models = []string{"=x"} },
		"negative queue":  func(c *Config) { c.Backends[0].QueueLength = -1 },
		"unknown routing": func(c *Config) { c.Routing = 7 },
	} {
		c := c
		c.Backends = append([]BackendConfig(nil), c.Backends...)
		mutate(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestOpenBackends(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tok := filepath.Join(dir, "t")
	os.WriteFile(tok, []byte("s3cret\n"), 0o600)
	c := DefaultConfig()
	c.Backends = []BackendConfig{{Name: "o", URL: "http://o:1"}, {Name: "v", Kind: KindOpenAI, URL: "http://v:2", TokenFile: tok,
		Models: []string{c.Inference.DefaultModel + "=hf/id"}, ContextTokens: 4096}}
	got, err := OpenBackends(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := got["o"].(*inference.Ollama); !ok {
		t.Errorf("o is %T", got["o"])
	}
	if v, ok := got["v"].(*inference.OpenAI); !ok || v.ContextTokens("") != 4096 {
		t.Errorf("v is %T", got["v"])
	}
	ic, err := c.inferenceConfig(c.EffectiveBackends()[1])
	if err != nil || ic.Token != "s3cret" || ic.ServedNames[c.Inference.DefaultModel] != "hf/id" {
		t.Fatalf("%+v, %v", ic, err)
	}
	c.Backends[1].TokenFile = filepath.Join(dir, "missing")
	if _, err := OpenBackends(c, nil); err == nil || !strings.Contains(err.Error(), "token_file") {
		t.Fatalf("missing token file: %v", err)
	}
	os.WriteFile(tok, []byte("a\nb\n"), 0o600)
	c.Backends[1].TokenFile = tok
	if _, err := OpenBackends(c, nil); err == nil {
		t.Fatal("a token file of two lines accepted")
	}
}
