// Package scrape reads a Prometheus text endpoint (infill's /metrics) into
// values a test or a benchmark can check: the end-to-end tests read the
// server's own view of its calls and gauges, and bench/soak its
// goroutines and memory.
package scrape

import (
	"context"
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families are the metric families of one scrape, by name.
type Families map[string]*dto.MetricFamily

// Get scrapes url.
func Get(ctx context.Context, url string) (Families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fs, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return fs, nil
}

// Has reports whether the scrape has the family name.
func (f Families) Has(name string) bool { return f[name] != nil }

// Value sums the samples of family name whose labels include every pair
// of labels (name, value, name, value, ...): counter, gauge and untyped
// values, and a histogram's or summary's count. A family or sample not
// there counts 0.
func (f Families) Value(name string, labels ...string) float64 {
	fam := f[name]
	if fam == nil {
		return 0
	}
	sum := 0.0
	for _, m := range fam.GetMetric() {
		if matches(m, labels) {
			sum += value(m)
		}
	}
	return sum
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	case m.Summary != nil:
		return float64(m.Summary.GetSampleCount())
	}
	return 0
}

// By sums family name's samples that match labels, grouped by the value
// of label key.
func (f Families) By(name, key string, labels ...string) map[string]float64 {
	out := map[string]float64{}
	fam := f[name]
	if fam == nil {
		return out
	}
	for _, m := range fam.GetMetric() {
		if !matches(m, labels) {
			continue
		}
		v := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == key {
				v = l.GetValue()
			}
		}
		out[v] += value(m)
	}
	return out
}

func matches(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
