package inference_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/ollama/ollama/api"

	"github.com/infill-dev/infill/inference"
	"github.com/infill-dev/infill/inference/ollamatest"
)

// modelChecker is what both backend kinds offer the health checks.
type modelChecker interface {
	CheckModel(ctx context.Context, model string) error
}

// TestCheckModelRealOllama asks the real Ollama's model lists, through its
// native API (/api/tags) and its OpenAI-style /v1/models: the default
// model, a name without its tag, a model it lacks (ErrModelNotFound naming
// it, found once it is created), a served-name mapping, and a stopped
// backend (ErrUnavailable, not a missing model).
func TestCheckModelRealOllama(t *testing.T) {
	t.Parallel()
	b := ollamatest.Start(t)
	ctx := context.Background()
	const absent = "qwen2.5-coder:1.5b-base"
	clients := map[string]func(inference.Config) (modelChecker, error){
		"ollama": func(c inference.Config) (modelChecker, error) { return inference.NewOllama(c, nil) },
		"openai": func(c inference.Config) (modelChecker, error) { return inference.NewOpenAI(c, nil) },
	}
	check := func(t *testing.T, kind, model string) error {
		t.Helper()
		cfg := inference.DefaultConfig()
		cfg.URL, cfg.DefaultModel = b.URL, b.Model
		cfg.ServedNames = map[string]string{"alias": b.Model}
		c, err := clients[kind](cfg)
		if err != nil {
			t.Fatal(err)
		}
		return c.CheckModel(ctx, model)
	}
	for kind := range clients {
		for _, m := range []string{"", b.Model, b.Model + ":latest", "alias"} {
			if err := check(t, kind, m); err != nil {
				t.Errorf("%s: CheckModel(%q): %v", kind, m, err)
			}
		}
		err := check(t, kind, absent)
		var me *inference.ModelError
		if !errors.As(err, &me) || me.Model != absent || !errors.Is(err, inference.ErrModelNotFound) {
			t.Errorf("%s: CheckModel(%q) = %v, want a ModelError naming it", kind, absent, err)
		}
	}
	if err := b.Client().Copy(ctx, &api.CopyRequest{Source: b.Model, Destination: absent}); err != nil {
		t.Fatal(err)
	}
	for kind := range clients {
		if err := check(t, kind, absent); err != nil {
			t.Errorf("%s: CheckModel(%q) after creating it: %v", kind, absent, err)
		}
	}
	b.Stop()
	for kind := range clients {
		if err := check(t, kind, ""); !errors.Is(err, inference.ErrUnavailable) || errors.Is(err, inference.ErrModelNotFound) {
			t.Errorf("%s: CheckModel with the backend stopped = %v, want ErrUnavailable", kind, err)
		}
	}
}

// A server that answers the model list with an error status is
// unavailable, not missing the model: a 404 there is a wrong URL.
func TestCheckModelListRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	cfg := inference.DefaultConfig()
	cfg.URL = srv.URL
	for kind, c := range map[string]func() (modelChecker, error){
		"ollama": func() (modelChecker, error) { return inference.NewOllama(cfg, nil) },
		"openai": func() (modelChecker, error) { return inference.NewOpenAI(cfg, nil) },
	} {
		mc, err := c()
		if err != nil {
			t.Fatal(err)
		}
		if err := mc.CheckModel(context.Background(), ""); !errors.Is(err, inference.ErrUnavailable) || errors.Is(err, inference.ErrModelNotFound) {
			t.Errorf("%s: %v, want ErrUnavailable", kind, err)
		}
	}
}
