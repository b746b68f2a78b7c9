package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/infill-dev/infill/inference"
)

// TestFakeHoldsItsModels: the fake lists the models -models names, so
// infill's own model check (the one its health runs before it reports a
// backend SERVING) passes for them and fails for any other; a generation
// of a model it lacks is Ollama's 404; one of a model it holds streams
// num_predict tokens and records the request for /fake/last.
func TestFakeHoldsItsModels(t *testing.T) {
	f := newFake(config{tokens: 4, models: []string{"infill-tiny", "fake:v1"}, version: "0.24.0"})
	srv := httptest.NewServer(f.routes())
	t.Cleanup(srv.Close)

	cfg := inference.DefaultConfig()
	cfg.URL = srv.URL
	o, err := inference.NewOllama(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, m := range []string{"infill-tiny", "infill-tiny:latest", "fake:v1"} {
		if err := o.CheckModel(ctx, m); err != nil {
			t.Errorf("CheckModel(%q): %v, want the fake to hold it", m, err)
		}
	}
	var me *inference.ModelError
	if err := o.CheckModel(ctx, "qwen2.5-coder:1.5b-base"); !errors.As(err, &me) {
		t.Errorf("CheckModel of a model the fake lacks: %v, want a *inference.ModelError", err)
	}

	u, _ := url.Parse(srv.URL)
	c := api.NewClient(u, http.DefaultClient)
	var se api.StatusError
	err = c.Generate(ctx, &api.GenerateRequest{Model: "other", Prompt: "x"}, func(api.GenerateResponse) error { return nil })
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
		t.Errorf("generate of a model the fake lacks: %v, want Ollama's 404", err)
	}
	if _, err := c.Show(ctx, &api.ShowRequest{Model: "other"}); !errors.As(err, &se) || se.StatusCode != http.StatusNotFound {
		t.Errorf("show of a model the fake lacks: %v, want Ollama's 404", err)
	}

	var tokens int
	var last api.GenerateResponse
	err = c.Generate(ctx, &api.GenerateRequest{Model: "infill-tiny", Prompt: "def f():", Raw: true,
		Options: map[string]any{"num_predict": 3}}, func(r api.GenerateResponse) error {
		if !r.Done {
			tokens++
		}
		last = r
		return nil
	})
	if err != nil || tokens != 3 || !last.Done || last.DoneReason != "length" || last.EvalCount != 3 {
		t.Errorf("generate: %v, %d tokens, last %+v; want 3 tokens, done for length", err, tokens, last)
	}
	resp, err := http.Get(srv.URL + "/fake/last")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l lastRequest
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("def f():"))
	if l.Model != "infill-tiny" || l.PromptBytes != 8 || !l.Raw || l.Requests != 1 || l.PromptSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("/fake/last: %+v", l)
	}
}
