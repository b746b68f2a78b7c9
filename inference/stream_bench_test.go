package inference

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	"github.com/ollama/ollama/api"
)

// BenchmarkStream compares reading one 16-token generate stream with
// generateStream and with api.Client.Generate (which allocates an 8 MiB
// scan buffer per call). Compare B/op and ns/op of the two in one run.
func BenchmarkStream(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i < 16; i++ {
			chunk(w, map[string]any{"response": "tok", "done": false})
		}
		chunk(w, map[string]any{"response": "", "done": true, "done_reason": "length", "eval_count": 16})
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	stream := true
	req := &api.GenerateRequest{Model: "m", Prompt: "p", Raw: true, Stream: &stream}
	count := func(api.GenerateResponse, bool) error { return nil }
	b.Run("generateStream", func(b *testing.B) {
		var tr tracker // with the watchdog, as Generate runs it
		b.ReportAllocs()
		for b.Loop() {
			w := tr.start(DefaultWatchdogConfig(), "m", 100, false, func() {})
			if err := generateStream(context.Background(), hc, u, req, w, count); err != nil {
				b.Fatal(err)
			}
			w.stop()
		}
	})
	b.Run("api.Client", func(b *testing.B) {
		c := api.NewClient(u, hc)
		b.ReportAllocs()
		for b.Loop() {
			if err := c.Generate(context.Background(), req, func(r api.GenerateResponse) error { return count(r, false) }); err != nil {
				b.Fatal(err)
			}
		}
	})
}
