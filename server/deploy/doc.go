// Package deploy owns infill's Kubernetes deployment: the Helm chart in
// helm/infill (infill-server's Deployment and Service with gRPC health
// probes, token and TLS Secrets, Prometheus annotations, an autoscaler on
// completions in flight, and optional Ollama or vLLM backends on a GPU), the
// example values in helm/examples, and docs/deploy.md (at the repository's root), which walks from a GPU
// cluster to a working editor.
//
// The package has no code: its tests run `helm lint --strict` and `helm
// template` through the pinned Helm module's own packages (helm.sh/helm/v3
// in go.mod) on the chart's default values and on every example, decode
// each rendered object strictly into its k8s.io/api type (an unknown or
// misplaced field fails, as the API server's strict field validation
// would), apply the API server's checks that decoding cannot (names,
// labels, selectors, named ports, probes, volumes, extended resources),
// evaluate the pods with the Pod Security admission's own checks, assert
// what the chart promises, and start the real infill-server with the
// rendered arguments to ask it what the kubelet's probes ask.
package deploy
