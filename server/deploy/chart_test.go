package deploy

import (
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/infill-dev/infill/server/auth"
	"helm.sh/helm/v3/pkg/releaseutil"
)

// release is one rendered release, decoded and validated.
type release struct {
	objs []object
}

// renderRelease renders vals, decodes every manifest strictly and applies
// the API checks; any failure fails the test.
func renderRelease(t *testing.T, vals map[string]any) *release {
	t.Helper()
	return decodeRelease(t, mustRender(t, vals))
}

func decodeRelease(t *testing.T, ms []releaseutil.Manifest) *release {
	t.Helper()
	objs, errs := decodeStrict(ms)
	for _, err := range errs {
		t.Errorf("strict decoding: %v", err)
	}
	for _, err := range validateObjects(objs) {
		t.Errorf("validation: %v", err)
	}
	if t.Failed() {
		t.FailNow()
	}
	return &release{objs: objs}
}

func find[T any](r *release, name string) (T, bool) {
	for _, o := range r.objs {
		if x, ok := o.obj.(T); ok && o.meta.GetName() == name {
			return x, true
		}
	}
	var zero T
	return zero, false
}

func must[T any](t *testing.T, r *release, name string) T {
	t.Helper()
	x, ok := find[T](r, name)
	if !ok {
		var zero T
		t.Fatalf("no %T named %q rendered", zero, name)
	}
	return x
}

// server returns the infill Deployment and its infill container.
func (r *release) server(t *testing.T) (*appsv1.Deployment, *corev1.Container) {
	t.Helper()
	d := must[*appsv1.Deployment](t, r, releaseName)
	return d, container(t, &d.Spec.Template.Spec, "infill")
}

func container(t *testing.T, spec *corev1.PodSpec, name string) *corev1.Container {
	t.Helper()
	for i := range spec.Containers {
		if spec.Containers[i].Name == name {
			return &spec.Containers[i]
		}
	}
	t.Fatalf("no container %q", name)
	return nil
}

// flag returns the value of --name=VALUE in args, and whether it is there
// (a flag without a value gives "").
func flag(args []string, name string) (string, bool) {
	for _, a := range args {
		if a == "--"+name {
			return "", true
		}
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

func port(t *testing.T, c *corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no port %q", c.Name, name)
	return 0
}

// secretMount returns the Secret mounted over the directory of file in
// spec's container c.
func secretMount(t *testing.T, spec *corev1.PodSpec, c *corev1.Container, file string) string {
	t.Helper()
	for _, m := range c.VolumeMounts {
		if path.Dir(file) != m.MountPath {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name == m.Name && v.Secret != nil {
				return v.Secret.SecretName
			}
		}
	}
	t.Fatalf("%s is not in a Secret mounted in %s", file, c.Name)
	return ""
}

// externalSecrets lists the Secrets the pods mount that the release does not
// render: those the user makes.
func (r *release) externalSecrets() []string {
	var out []string
	for _, tpl := range podTemplates(r.objs) {
		for _, v := range tpl.Spec.Volumes {
			if v.Secret == nil {
				continue
			}
			if _, ok := find[*corev1.Secret](r, v.Secret.SecretName); !ok && !slices.Contains(out, v.Secret.SecretName) {
				out = append(out, v.Secret.SecretName)
			}
		}
	}
	slices.Sort(out)
	return out
}

func TestManifestsValid(t *testing.T) {
	t.Parallel()
	want := map[string][]string{ // the Secrets each set expects the user to make
		"defaults":        {"infill-tokens"},
		"ollama.yaml":     {"infill-tokens"},
		"vllm.yaml":       {"infill-tokens"},
		"tls-tokens.yaml": {"infill-tls"},
	}
	for _, vs := range valueSets(t) {
		t.Run(vs.name, func(t *testing.T) {
			r := renderRelease(t, vs.vals)
			t.Logf("%d objects valid", len(r.objs))
			if got := r.externalSecrets(); !slices.Equal(got, want[vs.name]) {
				t.Errorf("Secrets to make by hand: %v, want %v", got, want[vs.name])
			}
		})
	}
}

// TestValidationCatchesMistakes shows that the strict decoding and the checks
// are not vacuous: each broken manifest fails.
func TestValidationCatchesMistakes(t *testing.T) {
	t.Parallel()
	ms := mustRender(t, map[string]any{})
	for name, tc := range map[string]struct{ old, new string }{
		"misplaced field":       {"      containers:\n", "      container:\n"},
		"unknown field":         {"          imagePullPolicy:", "          pullPolicy:"},
		"wrong type":            {"terminationGracePeriodSeconds: 30", "terminationGracePeriodSeconds: thirty"},
		"unknown kind":          {"kind: ServiceAccount", "kind: ServiceAcount"},
		"named port missing":    {"targetPort: http\n", "targetPort: https\n"},
		"selector mismatch":     {"      app.kubernetes.io/component: server\n  template:", "      app.kubernetes.io/component: api\n  template:"},
		"bad port name":         {"- name: metrics\n              containerPort", "- name: prometheus_metrics\n              containerPort"},
		"mount of no volume":    {"mountPath: /tmp", "mountPath: /tmp\n            - name: cache\n              mountPath: /cache"},
		"probe on missing port": {"grpc:\n              port: 50051", "grpc:\n              port: 50052"},
		"GPU as a fraction":     {"memory: 2Gi\n", "memory: 2Gi\n              nvidia.com/gpu: 500m\n"},
	} {
		t.Run(name, func(t *testing.T) {
			broken := slices.Clone(ms)
			changed := false
			for i, m := range broken {
				if strings.Contains(m.Content, tc.old) && !changed {
					broken[i].Content = strings.Replace(m.Content, tc.old, tc.new, 1)
					changed = true
				}
			}
			if !changed {
				t.Fatalf("no manifest contains %q", tc.old)
			}
			objs, errs := decodeStrict(broken)
			if len(errs) == 0 && len(validateObjects(objs)) == 0 {
				t.Errorf("the manifests passed with %q changed to %q", tc.old, tc.new)
			}
		})
	}
}

// TestServer checks infill-server's Deployment and Service in every value
// set: the listeners bind every interface on the ports the Service and the
// probes use, authentication is on, readiness asks grpc.health.v1 and
// liveness infill's own /livez (not /health, which follows the backend),
// and the metrics port is annotated for
// Prometheus.
func TestServer(t *testing.T) {
	t.Parallel()
	for _, vs := range valueSets(t) {
		t.Run(vs.name, func(t *testing.T) {
			r := renderRelease(t, vs.vals)
			d, c := r.server(t)
			tlsOn := vs.name == "tls-tokens.yaml"
			ports := map[string]int32{"grpc": port(t, c, "grpc"), "http": port(t, c, "http"), "metrics": port(t, c, "metrics")}
			for name, f := range map[string]string{"grpc": "listen", "http": "http-listen", "metrics": "metrics-listen"} {
				want := "0.0.0.0:" + strconv.Itoa(int(ports[name]))
				if got, _ := flag(c.Args, f); got != want {
					t.Errorf("--%s = %q, want %q (the container port %s)", f, got, want, name)
				}
			}

			tokens, ok := flag(c.Args, "auth-tokens")
			if !ok {
				t.Fatalf("no --auth-tokens in %q", c.Args)
			}
			if _, insecure := flag(c.Args, "insecure"); insecure {
				t.Errorf("--insecure with tokens on")
			}
			secret := secretMount(t, &d.Spec.Template.Spec, c, tokens)
			if _, rendered := find[*corev1.Secret](r, secret); !rendered && secret != "infill-tokens" {
				t.Errorf("token Secret %q is neither rendered nor the documented default", secret)
			}
			if _, ok := flag(c.Args, "evaluation"); !ok {
				t.Error("no --evaluation: a sandbox in a restricted pod cannot run")
			}

			rp, lp := c.ReadinessProbe, c.LivenessProbe
			if tlsOn {
				if rp.HTTPGet == nil || rp.HTTPGet.Scheme != corev1.URISchemeHTTPS || rp.HTTPGet.Path != "/health" {
					t.Errorf("readiness with TLS: %+v, want HTTPS /health (the kubelet's gRPC probe has no TLS)", rp.ProbeHandler)
				}
				cert, _ := flag(c.Args, "tls-cert")
				key, _ := flag(c.Args, "tls-key")
				if s := secretMount(t, &d.Spec.Template.Spec, c, cert); s != "infill-tls" || secretMount(t, &d.Spec.Template.Spec, c, key) != s {
					t.Errorf("--tls-cert %s and --tls-key %s are not in the Secret infill-tls", cert, key)
				}
			} else {
				if rp.GRPC == nil || rp.GRPC.Port != ports["grpc"] || rp.GRPC.Service == nil || *rp.GRPC.Service != "infill.v1.CompletionService" {
					t.Errorf("readiness: %+v, want grpc.health.v1 on port %d for infill.v1.CompletionService", rp.ProbeHandler, ports["grpc"])
				}
			}
			wantScheme := map[bool]corev1.URIScheme{false: corev1.URISchemeHTTP, true: corev1.URISchemeHTTPS}[tlsOn]
			if lp.HTTPGet == nil || lp.HTTPGet.Path != "/livez" || lp.HTTPGet.Port.StrVal != "http" || lp.HTTPGet.Scheme != wantScheme {
				t.Errorf("liveness: %+v, want %s GET /livez on the http port", lp.ProbeHandler, wantScheme)
			}

			ann := d.Spec.Template.Annotations
			if ann["prometheus.io/scrape"] != "true" || ann["prometheus.io/port"] != strconv.Itoa(int(ports["metrics"])) || ann["prometheus.io/path"] != "/metrics" {
				t.Errorf("pod annotations %v: want prometheus.io/scrape, port %d and path /metrics", ann, ports["metrics"])
			}

			svc := must[*corev1.Service](t, r, releaseName)
			for _, name := range []string{"grpc", "http", "metrics"} {
				if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
					return p.Name == name && p.TargetPort.StrVal == name && p.Port == ports[name]
				}) {
					t.Errorf("Service has no port %s → %s:%d", name, name, ports[name])
				}
			}
			if svc.Spec.SessionAffinity != corev1.ServiceAffinityClientIP {
				t.Errorf("Service sessionAffinity %q, want ClientIP", svc.Spec.SessionAffinity)
			}
			sc := c.SecurityContext
			if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || d.Spec.Template.Spec.SecurityContext.RunAsNonRoot == nil {
				t.Error("the infill container should run as non-root on a read-only root")
			}
		})
	}
}

// TestAuthChoices covers the other ways to authenticate, and running
// without any when told to.
func TestAuthChoices(t *testing.T) {
	t.Parallel()
	t.Run("insecure", func(t *testing.T) {
		r := renderRelease(t, map[string]any{"auth": map[string]any{"tokens": map[string]any{"enabled": false}, "insecure": true}})
		d, c := r.server(t)
		if _, ok := flag(c.Args, "insecure"); !ok {
			t.Errorf("no --insecure in %q", c.Args)
		}
		if _, ok := flag(c.Args, "auth-tokens"); ok {
			t.Errorf("--auth-tokens with tokens off")
		}
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Secret != nil {
				t.Errorf("Secret volume %s mounted with no authentication", v.Name)
			}
		}
	})
	t.Run("mutual TLS", func(t *testing.T) {
		r := renderRelease(t, map[string]any{
			"auth": map[string]any{"tokens": map[string]any{"enabled": false}},
			"tls":  map[string]any{"enabled": true, "secretName": "infill-tls", "clientCA": map[string]any{"secretName": "infill-client-ca"}},
		})
		d, c := r.server(t)
		ca, ok := flag(c.Args, "tls-client-ca")
		if !ok {
			t.Fatalf("no --tls-client-ca in %q", c.Args)
		}
		if s := secretMount(t, &d.Spec.Template.Spec, c, ca); s != "infill-client-ca" {
			t.Errorf("--tls-client-ca %s is in Secret %s", ca, s)
		}
		if _, ok := flag(c.Args, "insecure"); ok {
			t.Error("--insecure with client certificates")
		}
		// The kubelet presents no client certificate: only TCP probes pass.
		if c.ReadinessProbe.TCPSocket == nil || c.LivenessProbe.TCPSocket == nil {
			t.Errorf("probes with mutual TLS: %+v, %+v; want TCP", c.ReadinessProbe.ProbeHandler, c.LivenessProbe.ProbeHandler)
		}
	})
}

// TestTokenSecretParses writes the token file the chart renders from the
// tls-tokens example and loads it with infill's own token reader, as
// infill-server does at start.
func TestTokenSecretParses(t *testing.T) {
	t.Parallel()
	vals := exampleValues(t, "tls-tokens.yaml")
	r := renderRelease(t, vals)
	d, c := r.server(t)
	file, _ := flag(c.Args, "auth-tokens")
	s := must[*corev1.Secret](t, r, secretMount(t, &d.Spec.Template.Spec, c, file))
	data, ok := s.StringData[path.Base(file)]
	if !ok {
		t.Fatalf("Secret %s has no key %s", s.Name, path.Base(file))
	}
	tf := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tf, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	g, err := auth.New(auth.Config{TokenFile: tf}, nil)
	if err != nil {
		t.Fatalf("infill's token reader refuses the rendered file: %v\n%s", err, data)
	}
	if got := len(g.Tokens()); got != 2 {
		t.Errorf("%d tokens read, want the example's 2", got)
	}
	if d.Spec.Template.Annotations["checksum/tokens"] == "" {
		t.Error("no checksum/tokens annotation: a changed token list would not roll the pods")
	}
}

func exampleValues(t *testing.T, name string) map[string]any {
	t.Helper()
	for _, vs := range valueSets(t) {
		if vs.name == name {
			return vs.vals
		}
	}
	t.Fatalf("no example %s", name)
	return nil
}

// gpuLimit returns the container's nvidia.com/gpu limit.
func gpuLimit(c *corev1.Container) resource.Quantity {
	return c.Resources.Limits["nvidia.com/gpu"]
}

func TestOllamaBackend(t *testing.T) {
	t.Parallel()
	r := renderRelease(t, exampleValues(t, "ollama.yaml"))
	_, c := r.server(t)
	sts := must[*appsv1.StatefulSet](t, r, releaseName+"-ollama")
	spec := &sts.Spec.Template.Spec
	o := container(t, spec, "ollama")
	if q := gpuLimit(o); q.Value() < 1 {
		t.Errorf("ollama's nvidia.com/gpu limit %s, want at least 1", q.String())
	}
	if !slices.ContainsFunc(spec.Tolerations, func(tol corev1.Toleration) bool { return tol.Key == "nvidia.com/gpu" }) {
		t.Error("no toleration of the nvidia.com/gpu taint")
	}
	svc := must[*corev1.Service](t, r, releaseName+"-ollama")
	url, _ := flag(c.Args, "ollama-url")
	if want := "http://" + svc.Name + ":" + strconv.Itoa(int(svc.Spec.Ports[0].Port)); url != want {
		t.Errorf("--ollama-url=%s, want the Ollama Service %s", url, want)
	}
	slots, _ := flag(c.Args, "backend-slots")
	if !slices.ContainsFunc(o.Env, func(e corev1.EnvVar) bool { return e.Name == "OLLAMA_NUM_PARALLEL" && e.Value == slots }) {
		t.Errorf("OLLAMA_NUM_PARALLEL is not --backend-slots=%s: %v", slots, o.Env)
	}
	model, _ := flag(c.Args, "model")
	if len(spec.InitContainers) != 1 || !slices.Contains(spec.InitContainers[0].Command, model) {
		t.Errorf("no init container pulls --model=%s: %+v", model, spec.InitContainers)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 1 {
		t.Errorf("%d volume claim templates, want one model store", len(sts.Spec.VolumeClaimTemplates))
	}
}

func TestVLLMBackend(t *testing.T) {
	t.Parallel()
	r := renderRelease(t, exampleValues(t, "vllm.yaml"))
	_, c := r.server(t)
	sts := must[*appsv1.StatefulSet](t, r, releaseName+"-vllm")
	v := container(t, &sts.Spec.Template.Spec, "vllm")
	if q := gpuLimit(v); q.Value() < 1 {
		t.Errorf("vllm's nvidia.com/gpu limit %s, want at least 1", q.String())
	}
	model, _ := flag(c.Args, "model")
	if len(v.Args) == 0 || v.Args[0] != model {
		t.Errorf("vllm serves %q, infill asks for --model=%s", v.Args, model)
	}
	slots, _ := flag(c.Args, "backend-slots")
	if s, _ := flag(v.Args, "max-num-seqs"); s != slots {
		t.Errorf("vLLM --max-num-seqs=%s, infill --backend-slots=%s", s, slots)
	}
	if ctx, _ := flag(c.Args, "num-ctx"); !slices.Contains(v.Args, "--max-model-len="+ctx) {
		t.Errorf("vLLM's --max-model-len is not infill's --num-ctx=%s: %q", ctx, v.Args)
	}
	if !slices.Contains(v.Args, "--enable-prefix-caching") {
		t.Error("vLLM without prefix caching evaluates each keystroke's shared prefix again")
	}
	if v.StartupProbe == nil {
		t.Error("no startup probe: liveness would kill vLLM while it downloads the model")
	}
	svc := must[*corev1.Service](t, r, releaseName+"-vllm")
	b, ok := flag(c.Args, "backend")
	if !ok || !strings.Contains(b, "kind=openai") || !strings.Contains(b, "url=http://"+svc.Name+":8000") {
		t.Errorf("--backend=%q, want kind=openai at the vLLM Service %s", b, svc.Name)
	}
	if _, ok := flag(c.Args, "ollama-url"); ok {
		t.Error("--ollama-url with vLLM")
	}
}

func TestAutoscaler(t *testing.T) {
	t.Parallel()
	r := renderRelease(t, exampleValues(t, "tls-tokens.yaml"))
	d, _ := r.server(t)
	h := must[*autoscalingv2.HorizontalPodAutoscaler](t, r, releaseName)
	if ref := h.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != d.Name {
		t.Errorf("the autoscaler targets %s %s, want Deployment %s", ref.Kind, ref.Name, d.Name)
	}
	if d.Spec.Replicas != nil {
		t.Errorf("replicas %d set with an autoscaler: each helm upgrade would reset its count", *d.Spec.Replicas)
	}
	m := h.Spec.Metrics[0]
	if m.Pods == nil || m.Pods.Metric.Name != "infill_completions_in_flight" {
		t.Errorf("autoscaler metric %+v, want the Pods metric infill_completions_in_flight", m)
	}
	// Off by default: it needs a custom metrics adapter.
	if _, ok := find[*autoscalingv2.HorizontalPodAutoscaler](renderRelease(t, map[string]any{}), releaseName); ok {
		t.Error("an autoscaler with the default values")
	}
}
