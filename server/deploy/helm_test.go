package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// This file runs Helm as its command line does, through the packages of the
// pinned module (helm.sh/helm/v3 in go.mod): `helm lint --strict` is
// pkg/lint with every warning counted as a failure (what action.Lint does
// with Strict), and `helm template` is pkg/engine's render of the values
// coalesced and checked against values.schema.json, with NOTES.txt and the
// partials dropped and the manifests put in install order (what
// action.Install does with ClientOnly). Going through the packages rather
// than a helm binary saves building the whole CLI (its registry, storage and
// kubectl code) in every CI run.

const (
	chartDir    = "helm/infill"
	examplesDir = "helm/examples"
	releaseName = "infill"
	namespace   = "default"
)

// kubeVersion is the Kubernetes version the pinned Helm reports, as its
// release binary does: its Makefile sets it from the k8s.io/client-go minor
// version it is built with (v0.37 → 1.37). TestKubeVersionMatchesClientGo
// keeps the two together.
const kubeVersion = "v1.37.0"

// valueSet is one set of values the chart is linted and rendered with.
type valueSet struct {
	name string // "" for the chart's defaults, else the example file
	vals map[string]any
}

// valueSets returns the chart's default values and every example, each
// read as `helm -f FILE` reads it.
func valueSets(t *testing.T) []valueSet {
	t.Helper()
	sets := []valueSet{{name: "defaults", vals: map[string]any{}}}
	files, err := filepath.Glob(filepath.Join(examplesDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("examples: %d files in %s, want the ollama, vllm and tls-tokens examples", len(files), examplesDir)
	}
	for _, f := range files {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		sets = append(sets, valueSet{name: filepath.Base(f), vals: v.AsMap()})
	}
	return sets
}

func kubeCaps(t testing.TB) *chartutil.Capabilities {
	t.Helper()
	kv, err := chartutil.ParseKubeVersion(kubeVersion)
	if err != nil {
		t.Fatal(err)
	}
	caps := chartutil.DefaultCapabilities.Copy()
	caps.KubeVersion = *kv
	return caps
}

// lintStrict is `helm lint --strict --kube-version kubeVersion` with vals
// as the -f file: the messages that make it fail.
func lintStrict(t testing.TB, vals map[string]any) []support.Message {
	t.Helper()
	return lintStrictFor(vals, &kubeCaps(t).KubeVersion)
}

// lintStrictFor is lintStrict for a helm that reports Kubernetes kv.
func lintStrictFor(vals map[string]any, kv *chartutil.KubeVersion) []support.Message {
	linter := lint.AllWithKubeVersionAndSchemaValidation(chartDir, vals, namespace, kv, false)
	var failed []support.Message
	for _, m := range linter.Messages {
		if m.Severity >= support.WarningSev {
			failed = append(failed, m)
		}
	}
	return failed
}

// loadChart loads the chart directory as `helm template` does.
func loadChart(t testing.TB) *chart.Chart {
	t.Helper()
	c, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("loading %s: %v", chartDir, err)
	}
	return c
}

// render is `helm template infill helm/infill -f vals` with the release
// helm binary (kubeVersion): the manifests in install order, each named
// by its template, or the error helm would print.
func render(t testing.TB, c *chart.Chart, vals map[string]any) ([]releaseutil.Manifest, error) {
	t.Helper()
	return renderFor(c, vals, kubeCaps(t))
}

// renderFor is render for a helm that reports caps: what action.Install
// does with ClientOnly, the chart's kubeVersion (when it has one) checked
// first.
func renderFor(c *chart.Chart, vals map[string]any, caps *chartutil.Capabilities) ([]releaseutil.Manifest, error) {
	if c.Metadata.KubeVersion != "" && !chartutil.IsCompatibleRange(c.Metadata.KubeVersion, caps.KubeVersion.String()) {
		return nil, fmt.Errorf("chart requires kubeVersion: %s which is incompatible with Kubernetes %s", c.Metadata.KubeVersion, caps.KubeVersion.Version)
	}
	opts := chartutil.ReleaseOptions{Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true}
	rv, err := chartutil.ToRenderValuesWithSchemaValidation(c, vals, opts, caps, false)
	if err != nil {
		return nil, err
	}
	files, err := engine.Render(c, rv)
	if err != nil {
		return nil, err
	}
	for name := range files {
		if strings.HasSuffix(name, "NOTES.txt") {
			delete(files, name)
		}
	}
	hooks, manifests, err := releaseutil.SortManifests(files, caps.APIVersions, releaseutil.InstallOrder)
	if err != nil {
		return nil, err
	}
	if len(hooks) > 0 {
		return nil, fmt.Errorf("%d hooks rendered: the chart has none", len(hooks))
	}
	return manifests, nil
}

// mustRender renders vals and fails the test on an error.
func mustRender(t testing.TB, vals map[string]any) []releaseutil.Manifest {
	t.Helper()
	m, err := render(t, loadChart(t), vals)
	if err != nil {
		t.Fatalf("helm template: %v", err)
	}
	return m
}

// TestLintStrict lints as plain `helm lint --strict` does, with the
// release helm binary and with one built from the pinned module (see
// TestTemplate).
func TestLintStrict(t *testing.T) {
	t.Parallel()
	for helm, caps := range map[string]*chartutil.Capabilities{
		"release binary":      kubeCaps(t),
		"go install / go run": chartutil.DefaultCapabilities,
	} {
		for _, vs := range valueSets(t) {
			t.Run(helm+"/"+vs.name, func(t *testing.T) {
				for _, m := range lintStrictFor(vs.vals, &caps.KubeVersion) {
					t.Errorf("helm lint --strict: %s", m)
				}
			})
		}
	}
}

// TestLintCatchesMistakes shows the lint is not vacuous: a value the schema
// does not know and a wrong type both fail it.
func TestLintCatchesMistakes(t *testing.T) {
	t.Parallel()
	for name, vals := range map[string]map[string]any{
		"unknown value":       {"replicas": 3},
		"evaluation unquoted": {"evaluation": false},
		"bad token line":      {"auth": map[string]any{"tokens": map[string]any{"lines": []any{"alice complete"}}}},
		"slots zero":          {"backend": map[string]any{"slots": 0}},
	} {
		t.Run(name, func(t *testing.T) {
			if len(lintStrict(t, vals)) == 0 {
				t.Errorf("helm lint --strict passed values %v", vals)
			}
		})
	}
}

// TestTemplate renders the chart as plain `helm template infill
// server/deploy/helm/infill` does, with no --kube-version, both with the
// release helm binary (which reports its client-go's Kubernetes version,
// kubeVersion) and with one built by `go install` or `go run` from the
// pinned module (which reports pkg/chartutil's default, v1.20.0: the
// Kubernetes 1.24 the chart needs cannot be a kubeVersion constraint, or
// that helm refuses to render it; docs/deploy.md says what it needs).
func TestTemplate(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	for helm, caps := range map[string]*chartutil.Capabilities{
		"release binary":      kubeCaps(t),
		"go install / go run": chartutil.DefaultCapabilities,
	} {
		for _, vs := range valueSets(t) {
			t.Run(helm+"/"+vs.name, func(t *testing.T) {
				templateOK(t, c, vs.vals, caps)
			})
		}
	}
}

// templateOK renders vals for caps and checks every manifest has content.
func templateOK(t *testing.T, c *chart.Chart, vals map[string]any, caps *chartutil.Capabilities) {
	t.Helper()
	ms, err := renderFor(c, vals, caps)
	if err != nil {
		t.Fatalf("helm template (Kubernetes %s): %v", caps.KubeVersion.Version, err)
	}
	if len(ms) == 0 {
		t.Fatal("helm template rendered nothing")
	}
	for _, m := range ms {
		if strings.TrimSpace(m.Content) == "" {
			t.Errorf("%s: empty manifest", m.Name)
		}
	}
}

// TestTemplateRefuses checks the values the chart refuses with a message
// that says what to do, as `helm template` and `helm install` print it.
func TestTemplateRefuses(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	for name, tc := range map[string]struct {
		vals map[string]any
		want string
	}{
		"no authentication": {
			map[string]any{"auth": map[string]any{"tokens": map[string]any{"enabled": false}}},
			"auth.insecure=true",
		},
		"two backends": {
			map[string]any{"ollama": map[string]any{"enabled": true}, "vllm": map[string]any{"enabled": true}},
			"enable one backend",
		},
		"TLS without its Secret": {
			map[string]any{"tls": map[string]any{"enabled": true}},
			"tls.secretName",
		},
		"no backend URL": {
			map[string]any{"backend": map[string]any{"url": ""}},
			"backend.url is empty",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := render(t, c, tc.vals)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template with %v: error %v, want one saying %q", tc.vals, err, tc.want)
			}
		})
	}
}

// TestKubeVersionMatchesClientGo keeps kubeVersion on the Kubernetes minor
// version of the client-go in go.mod, as Helm's release build does.
func TestKubeVersionMatchesClientGo(t *testing.T) {
	t.Parallel()
	gomod := readFile(t, "../../go.mod")
	f, err := modfile.ParseLax("go.mod", []byte(gomod), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range f.Require {
		if r.Mod.Path != "k8s.io/client-go" {
			continue
		}
		// v0.37.0 → v1.37.0.
		var minor int
		if _, err := fmt.Sscanf(r.Mod.Version, "v0.%d.", &minor); err != nil {
			t.Fatalf("client-go version %q: %v", r.Mod.Version, err)
		}
		if want := fmt.Sprintf("v1.%d.0", minor); kubeVersion != want {
			t.Errorf("kubeVersion = %s, go.mod's client-go %s says %s", kubeVersion, r.Mod.Version, want)
		}
		return
	}
	t.Fatal("k8s.io/client-go is not in go.mod")
}

// readFile reads a file of this package's tree.
func readFile(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestNotesKubeVersion: the notes helm prints after an install name the
// Kubernetes version the chart needs when helm reports an older one (a
// cluster before 1.24, or a helm built from source rendering offline), and
// say nothing of it otherwise.
func TestNotesKubeVersion(t *testing.T) {
	t.Parallel()
	c := loadChart(t)
	opts := chartutil.ReleaseOptions{Name: releaseName, Namespace: namespace, Revision: 1, IsInstall: true}
	for helm, caps := range map[string]*chartutil.Capabilities{"release binary": kubeCaps(t), "go install / go run": chartutil.DefaultCapabilities} {
		rv, err := chartutil.ToRenderValuesWithSchemaValidation(c, map[string]any{}, opts, caps, false)
		if err != nil {
			t.Fatal(err)
		}
		files, err := engine.Render(c, rv)
		if err != nil {
			t.Fatal(err)
		}
		notes := files["infill/templates/NOTES.txt"]
		minor, err := strconv.Atoi(caps.KubeVersion.Minor)
		if err != nil {
			t.Fatal(err)
		}
		old := minor < 24
		if says := strings.Contains(notes, "needs 1.24 or later"); says != old {
			t.Errorf("%s (Kubernetes %s): notes say the version needed: %v, want %v:\n%s", helm, caps.KubeVersion.Version, says, old, notes)
		}
	}
}
