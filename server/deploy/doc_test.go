package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// fencedBlocks returns the bodies of a markdown document's ``` blocks of language lang.
func fencedBlocks(doc, lang string) []string {
	var blocks []string
	re := regexp.MustCompile("(?ms)^( *)```" + lang + "\n(.*?)^ *```")
	for _, m := range re.FindAllStringSubmatch(doc, -1) {
		indent := m[1]
		var lines []string
		for _, l := range strings.Split(m[2], "\n") {
			lines = append(lines, strings.TrimPrefix(l, indent))
		}
		blocks = append(blocks, strings.Join(lines, "\n"))
	}
	return blocks
}

// TestDeployDoc keeps docs/deploy.md, the walk-through in step with the chart: its YAML parses,
// the files it installs from exist, and the names it gives (the autoscaler's
// metric, the TLS Secret) are the chart's.
func TestDeployDoc(t *testing.T) {
	t.Parallel()
	doc := readFile(t, "../../docs/deploy.md")
	blocks := fencedBlocks(doc, "yaml")
	if len(blocks) < 5 {
		t.Fatalf("%d yaml blocks in docs/deploy.md, want the Certificate, Continue, Envoy, Istio and adapter ones", len(blocks))
	}
	var adapterMetric, certSecret string
	for i, b := range blocks {
		var v map[string]any
		if err := yaml.UnmarshalStrict([]byte(b), &v); err != nil {
			t.Errorf("yaml block %d does not parse: %v\n%s", i, err, b)
			continue
		}
		if rules, ok := v["rules"].(map[string]any); ok {
			custom, _ := rules["custom"].([]any)
			if len(custom) == 1 {
				name, _ := custom[0].(map[string]any)["name"].(map[string]any)
				adapterMetric, _ = name["as"].(string)
			}
		}
		if v["kind"] == "Certificate" {
			certSecret, _ = v["spec"].(map[string]any)["secretName"].(string)
		}
	}
	defaults, err := os.ReadFile(chartDir + "/values.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var vals struct {
		Autoscaling struct {
			MetricName string `json:"metricName"`
		} `json:"autoscaling"`
	}
	if err := yaml.Unmarshal(defaults, &vals); err != nil {
		t.Fatal(err)
	}
	if adapterMetric != vals.Autoscaling.MetricName {
		t.Errorf("the adapter rule serves %q, the autoscaler asks for %q", adapterMetric, vals.Autoscaling.MetricName)
	}
	if tlsSecret := exampleValues(t, "tls-tokens.yaml")["tls"].(map[string]any)["secretName"]; certSecret != tlsSecret {
		t.Errorf("the Certificate writes Secret %q, the TLS example mounts %q", certSecret, tlsSecret)
	}
	for _, m := range regexp.MustCompile(`-f server/deploy/(helm/examples/[\w.-]+)`).FindAllStringSubmatch(doc, -1) {
		if _, err := os.Stat(m[1]); err != nil {
			t.Errorf("README installs with %s: %v", m[1], err)
		}
	}
	if n := strings.Count(doc, "x-infill-session"); n < 4 {
		t.Errorf("the affinity header appears %d times: Envoy, Istio, ingress-nginx and the client should all name it", n)
	}
}
