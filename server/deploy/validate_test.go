package deploy

import (
	"fmt"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/releaseutil"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/scheme"
)

// This file checks rendered manifests against the Kubernetes API in two
// steps, both from the k8s.io modules the pinned Helm brings (no JSON
// schema set is published as a Go module, and kubeconform's schemas are
// downloaded from GitHub, which neither this machine nor CI reaches):
//
//  1. Strict decoding into the k8s.io/api types with client-go's scheme: an
//     unknown kind or apiVersion, an unknown or misplaced field, a
//     duplicate field or a value of the wrong type fails, as `kubectl apply`
//     with the API server's strict field validation would.
//  2. The API server's own checks that decoding does not make, written here
//     from k8s.io/apimachinery's validators (the API server's validation
//     package, k8s.io/kubernetes/pkg/apis/.../validation, cannot be
//     imported as a module): object names, labels and annotations,
//     selectors that match their pod templates, port names, probes with
//     exactly one handler and named ports that exist, volume mounts of
//     declared volumes, environment variable names, and extended resources
//     (nvidia.com/gpu) given as whole limits.
//
// Beyond the API server it checks the references between the rendered
// objects: a Service selects pods of a rendered workload whose ports its
// target ports name, the autoscaler targets a rendered Deployment, a
// StatefulSet's serviceName is a rendered headless Service.

// object is one decoded manifest.
type object struct {
	template string // the chart template it came from
	obj      runtime.Object
	meta     metav1.Object
	kind     string
}

// strictDecoder decodes YAML into client-go's scheme types, refusing
// unknown and duplicate fields.
var strictDecoder = json.NewSerializerWithOptions(json.DefaultMetaFactory, scheme.Scheme, scheme.Scheme,
	json.SerializerOptions{Yaml: true, Strict: true})

// decodeStrict decodes every manifest into its typed object.
func decodeStrict(ms []releaseutil.Manifest) ([]object, []error) {
	var objs []object
	var errs []error
	for _, m := range ms {
		obj, gvk, err := strictDecoder.Decode([]byte(m.Content), nil, nil)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s (%s %s): %w", m.Name, m.Head.Kind, nameOf(m), err))
			continue
		}
		meta, err := metaOf(obj)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", m.Name, err))
			continue
		}
		objs = append(objs, object{template: m.Name, obj: obj, meta: meta, kind: gvk.Kind})
	}
	return objs, errs
}

func nameOf(m releaseutil.Manifest) string {
	if m.Head != nil && m.Head.Metadata != nil {
		return m.Head.Metadata.Name
	}
	return ""
}

func metaOf(obj runtime.Object) (metav1.Object, error) {
	if o, ok := obj.(metav1.Object); ok {
		return o, nil
	}
	return nil, fmt.Errorf("%T has no object metadata", obj)
}

// validateObjects applies the API server's checks and the cross-references
// to the decoded objects of one release.
func validateObjects(objs []object) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for _, o := range objs {
		key := o.kind + "/" + o.meta.GetName()
		root := field.NewPath(key)
		if seen[key] {
			errs = append(errs, field.Duplicate(root, "rendered twice"))
		}
		seen[key] = true
		nameFn := apivalidation.NameIsDNSSubdomain
		if o.kind == "Service" {
			nameFn = apivalidation.NameIsDNS1035Label
		}
		if a, ok := o.obj.(metav1.ObjectMetaAccessor); ok {
			if om, ok := a.GetObjectMeta().(*metav1.ObjectMeta); ok {
				errs = append(errs, apivalidation.ValidateObjectMeta(om, false, nameFn, root.Child("metadata"))...)
			}
		}
		switch x := o.obj.(type) {
		case *appsv1.Deployment:
			errs = append(errs, validateWorkload(root.Child("spec"), x.Spec.Selector, x.Spec.Template)...)
		case *appsv1.StatefulSet:
			errs = append(errs, validateWorkload(root.Child("spec"), x.Spec.Selector, x.Spec.Template, claimNames(x.Spec.VolumeClaimTemplates)...)...)
			if svc := findService(objs, x.Spec.ServiceName); svc == nil || svc.Spec.ClusterIP != corev1.ClusterIPNone {
				errs = append(errs, field.Invalid(root.Child("spec", "serviceName"), x.Spec.ServiceName, "not a rendered headless Service"))
			}
		case *corev1.Service:
			errs = append(errs, validateService(root.Child("spec"), x, objs)...)
		case *autoscalingv2.HorizontalPodAutoscaler:
			errs = append(errs, validateHPA(root.Child("spec"), x, objs)...)
		case *policyv1.PodDisruptionBudget:
			p := root.Child("spec", "selector")
			errs = append(errs, metav1validation.ValidateLabelSelector(x.Spec.Selector, metav1validation.LabelSelectorValidationOptions{}, p)...)
			if len(podsSelected(objs, x.Spec.Selector)) == 0 {
				errs = append(errs, field.Invalid(p, x.Spec.Selector, "selects no rendered pod template"))
			}
		case *corev1.Secret, *corev1.ServiceAccount:
		default:
			errs = append(errs, field.NotSupported(root, o.kind, []string{"the kinds this test knows"}))
		}
	}
	return errs
}

func claimNames(cts []corev1.PersistentVolumeClaim) []string {
	var names []string
	for _, c := range cts {
		names = append(names, c.Name)
	}
	return names
}

// validateWorkload checks a Deployment's or StatefulSet's selector and pod
// template; claims are the volumes its volumeClaimTemplates add.
func validateWorkload(p *field.Path, sel *metav1.LabelSelector, tpl corev1.PodTemplateSpec, claims ...string) field.ErrorList {
	var errs field.ErrorList
	if sel == nil || len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
		return append(errs, field.Required(p.Child("selector"), "a workload needs a non-empty selector"))
	}
	errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, p.Child("selector"))...)
	errs = append(errs, metav1validation.ValidateLabels(tpl.Labels, p.Child("template", "metadata", "labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(tpl.Annotations, p.Child("template", "metadata", "annotations"))...)
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		errs = append(errs, field.Invalid(p.Child("selector"), sel, err.Error()))
	} else if !s.Matches(labels.Set(tpl.Labels)) {
		errs = append(errs, field.Invalid(p.Child("template", "metadata", "labels"), tpl.Labels, "does not match the selector"))
	}
	return append(errs, validatePodSpec(p.Child("template", "spec"), &tpl.Spec, claims)...)
}

func validatePodSpec(p *field.Path, spec *corev1.PodSpec, claims []string) field.ErrorList {
	var errs field.ErrorList
	volumes := map[string]bool{}
	for _, c := range claims {
		volumes[c] = true
	}
	for i, v := range spec.Volumes {
		vp := p.Child("volumes").Index(i)
		for _, msg := range validation.IsDNS1123Label(v.Name) {
			errs = append(errs, field.Invalid(vp.Child("name"), v.Name, msg))
		}
		if volumes[v.Name] {
			errs = append(errs, field.Duplicate(vp.Child("name"), v.Name))
		}
		volumes[v.Name] = true
		sources := 0
		for _, set := range []bool{v.EmptyDir != nil, v.Secret != nil, v.ConfigMap != nil, v.PersistentVolumeClaim != nil,
			v.HostPath != nil, v.Projected != nil, v.CSI != nil, v.Ephemeral != nil} {
			if set {
				sources++
			}
		}
		if sources != 1 {
			errs = append(errs, field.Invalid(vp, v.Name, fmt.Sprintf("%d volume sources, want exactly 1", sources)))
		}
		if v.Secret != nil && v.Secret.SecretName == "" {
			errs = append(errs, field.Required(vp.Child("secret", "secretName"), ""))
		}
	}
	names := map[string]bool{}
	portNames := map[string]bool{}
	all := slices.Concat(spec.InitContainers, spec.Containers)
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(p.Child("containers"), ""))
	}
	for i, c := range all {
		cp := p.Child("containers").Index(i)
		if i < len(spec.InitContainers) {
			cp = p.Child("initContainers").Index(i)
		}
		for _, msg := range validation.IsDNS1123Label(c.Name) {
			errs = append(errs, field.Invalid(cp.Child("name"), c.Name, msg))
		}
		if names[c.Name] {
			errs = append(errs, field.Duplicate(cp.Child("name"), c.Name))
		}
		names[c.Name] = true
		if c.Image == "" || strings.HasSuffix(c.Image, ":") {
			errs = append(errs, field.Invalid(cp.Child("image"), c.Image, "no image, or no tag"))
		}
		for j, port := range c.Ports {
			pp := cp.Child("ports").Index(j)
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, msg))
			}
			if port.Name != "" {
				for _, msg := range validation.IsValidPortName(port.Name) {
					errs = append(errs, field.Invalid(pp.Child("name"), port.Name, msg))
				}
				if portNames[port.Name] {
					errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
				}
				portNames[port.Name] = true
			}
		}
		for j, e := range c.Env {
			for _, msg := range validation.IsEnvVarName(e.Name) {
				errs = append(errs, field.Invalid(cp.Child("env").Index(j).Child("name"), e.Name, msg))
			}
		}
		for j, m := range c.VolumeMounts {
			if !volumes[m.Name] {
				errs = append(errs, field.NotFound(cp.Child("volumeMounts").Index(j).Child("name"), m.Name))
			}
			if !strings.HasPrefix(m.MountPath, "/") {
				errs = append(errs, field.Invalid(cp.Child("volumeMounts").Index(j).Child("mountPath"), m.MountPath, "not absolute"))
			}
		}
		for name, probe := range map[string]*corev1.Probe{"readinessProbe": c.ReadinessProbe, "livenessProbe": c.LivenessProbe, "startupProbe": c.StartupProbe} {
			if probe != nil {
				errs = append(errs, validateProbe(cp.Child(name), probe, c.Ports)...)
			}
		}
		errs = append(errs, validateResources(cp.Child("resources"), c.Resources)...)
	}
	return errs
}

// validateProbe checks that a probe has one handler, and that the port it
// names is one of the container's.
func validateProbe(p *field.Path, pr *corev1.Probe, ports []corev1.ContainerPort) field.ErrorList {
	var errs field.ErrorList
	var port *intstr.IntOrString
	handlers := 0
	if pr.Exec != nil {
		handlers++
	}
	if pr.HTTPGet != nil {
		handlers++
		port = &pr.HTTPGet.Port
		if s := pr.HTTPGet.Scheme; s != "" && s != corev1.URISchemeHTTP && s != corev1.URISchemeHTTPS {
			errs = append(errs, field.NotSupported(p.Child("httpGet", "scheme"), s, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
		}
	}
	if pr.TCPSocket != nil {
		handlers++
		port = &pr.TCPSocket.Port
	}
	if pr.GRPC != nil {
		handlers++
		p := intstr.FromInt32(pr.GRPC.Port)
		port = &p
	}
	if handlers != 1 {
		return append(errs, field.Invalid(p, handlers, "a probe needs exactly one handler"))
	}
	if port != nil {
		found := slices.ContainsFunc(ports, func(cp corev1.ContainerPort) bool {
			if port.Type == intstr.String {
				return cp.Name == port.StrVal
			}
			return cp.ContainerPort == port.IntVal
		})
		if !found {
			errs = append(errs, field.NotFound(p.Child("port"), port.String()))
		}
	}
	for name, v := range map[string]int32{"periodSeconds": pr.PeriodSeconds, "timeoutSeconds": pr.TimeoutSeconds,
		"failureThreshold": pr.FailureThreshold, "initialDelaySeconds": pr.InitialDelaySeconds} {
		if v < 0 {
			errs = append(errs, field.Invalid(p.Child(name), v, "negative"))
		}
	}
	return errs
}

// validateResources checks requests against limits, and that extended
// resources (a domain-prefixed name, e.g. nvidia.com/gpu) are whole numbers
// given as limits, with any request equal to the limit.
func validateResources(p *field.Path, r corev1.ResourceRequirements) field.ErrorList {
	var errs field.ErrorList
	for name, lim := range r.Limits {
		if req, ok := r.Requests[name]; ok && req.Cmp(lim) > 0 {
			errs = append(errs, field.Invalid(p.Child("requests").Key(string(name)), req.String(), "above the limit "+lim.String()))
		}
	}
	for _, list := range []struct {
		name string
		rl   corev1.ResourceList
	}{{"limits", r.Limits}, {"requests", r.Requests}} {
		for name, q := range list.rl {
			if !strings.Contains(string(name), "/") {
				continue
			}
			qp := p.Child(list.name).Key(string(name))
			if q.MilliValue()%1000 != 0 {
				errs = append(errs, field.Invalid(qp, q.String(), "an extended resource must be a whole number"))
			}
			if list.name == "requests" {
				if lim, ok := r.Limits[name]; !ok || lim.Cmp(q) != 0 {
					errs = append(errs, field.Invalid(qp, q.String(), "an extended resource's request must equal its limit"))
				}
			}
		}
	}
	return errs
}

func findService(objs []object, name string) *corev1.Service {
	for _, o := range objs {
		if s, ok := o.obj.(*corev1.Service); ok && s.Name == name {
			return s
		}
	}
	return nil
}

// podTemplates returns the rendered workloads' pod templates.
func podTemplates(objs []object) []*corev1.PodTemplateSpec {
	var tpls []*corev1.PodTemplateSpec
	for _, o := range objs {
		switch x := o.obj.(type) {
		case *appsv1.Deployment:
			tpls = append(tpls, &x.Spec.Template)
		case *appsv1.StatefulSet:
			tpls = append(tpls, &x.Spec.Template)
		}
	}
	return tpls
}

func podsSelected(objs []object, sel *metav1.LabelSelector) []*corev1.PodTemplateSpec {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || s.Empty() {
		return nil
	}
	var out []*corev1.PodTemplateSpec
	for _, t := range podTemplates(objs) {
		if s.Matches(labels.Set(t.Labels)) {
			out = append(out, t)
		}
	}
	return out
}

func validateService(p *field.Path, svc *corev1.Service, objs []object) field.ErrorList {
	var errs field.ErrorList
	switch svc.Spec.Type {
	case "", corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
	default:
		errs = append(errs, field.NotSupported(p.Child("type"), svc.Spec.Type, []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer}))
	}
	switch svc.Spec.SessionAffinity {
	case "", corev1.ServiceAffinityNone, corev1.ServiceAffinityClientIP:
	default:
		errs = append(errs, field.NotSupported(p.Child("sessionAffinity"), svc.Spec.SessionAffinity, []corev1.ServiceAffinity{corev1.ServiceAffinityNone, corev1.ServiceAffinityClientIP}))
	}
	errs = append(errs, metav1validation.ValidateLabels(svc.Spec.Selector, p.Child("selector"))...)
	pods := podsSelected(objs, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
	if len(pods) != 1 {
		errs = append(errs, field.Invalid(p.Child("selector"), svc.Spec.Selector, fmt.Sprintf("selects %d rendered pod templates, want 1", len(pods))))
	}
	if len(svc.Spec.Ports) == 0 {
		errs = append(errs, field.Required(p.Child("ports"), ""))
	}
	names := map[string]bool{}
	for i, port := range svc.Spec.Ports {
		pp := p.Child("ports").Index(i)
		if len(svc.Spec.Ports) > 1 || port.Name != "" {
			for _, msg := range validation.IsDNS1123Label(port.Name) {
				errs = append(errs, field.Invalid(pp.Child("name"), port.Name, msg))
			}
		}
		if names[port.Name] {
			errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
		}
		names[port.Name] = true
		for _, msg := range validation.IsValidPortNum(int(port.Port)) {
			errs = append(errs, field.Invalid(pp.Child("port"), port.Port, msg))
		}
		if port.AppProtocol != nil {
			for _, msg := range validation.IsQualifiedName(*port.AppProtocol) {
				errs = append(errs, field.Invalid(pp.Child("appProtocol"), *port.AppProtocol, msg))
			}
		}
		if port.TargetPort.Type == intstr.String {
			for _, msg := range validation.IsValidPortName(port.TargetPort.StrVal) {
				errs = append(errs, field.Invalid(pp.Child("targetPort"), port.TargetPort.StrVal, msg))
			}
			for _, pod := range pods {
				if !podHasPort(&pod.Spec, port.TargetPort.StrVal) {
					errs = append(errs, field.NotFound(pp.Child("targetPort"), port.TargetPort.StrVal))
				}
			}
		}
	}
	return errs
}

func podHasPort(spec *corev1.PodSpec, name string) bool {
	for _, c := range spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name {
				return true
			}
		}
	}
	return false
}

func validateHPA(p *field.Path, h *autoscalingv2.HorizontalPodAutoscaler, objs []object) field.ErrorList {
	var errs field.ErrorList
	ref := h.Spec.ScaleTargetRef
	found := slices.ContainsFunc(objs, func(o object) bool {
		return o.kind == ref.Kind && o.meta.GetName() == ref.Name && ref.APIVersion == "apps/v1"
	})
	if !found {
		errs = append(errs, field.NotFound(p.Child("scaleTargetRef"), ref))
	}
	if h.Spec.MinReplicas == nil || *h.Spec.MinReplicas < 1 {
		errs = append(errs, field.Invalid(p.Child("minReplicas"), h.Spec.MinReplicas, "must be at least 1"))
	} else if h.Spec.MaxReplicas < *h.Spec.MinReplicas {
		errs = append(errs, field.Invalid(p.Child("maxReplicas"), h.Spec.MaxReplicas, "below minReplicas"))
	}
	if len(h.Spec.Metrics) == 0 {
		errs = append(errs, field.Required(p.Child("metrics"), ""))
	}
	for i, m := range h.Spec.Metrics {
		mp := p.Child("metrics").Index(i)
		if m.Type != autoscalingv2.PodsMetricSourceType || m.Pods == nil {
			errs = append(errs, field.Invalid(mp, m.Type, "want a Pods metric"))
			continue
		}
		if m.Pods.Metric.Name == "" {
			errs = append(errs, field.Required(mp.Child("pods", "metric", "name"), ""))
		}
		t := m.Pods.Target
		if t.Type != autoscalingv2.AverageValueMetricType || t.AverageValue == nil || t.AverageValue.Sign() <= 0 {
			errs = append(errs, field.Invalid(mp.Child("pods", "target"), t, "a Pods metric needs a positive averageValue"))
		}
	}
	if b := h.Spec.Behavior; b != nil && b.ScaleDown != nil && b.ScaleDown.StabilizationWindowSeconds != nil {
		if w := *b.ScaleDown.StabilizationWindowSeconds; w < 0 || w > 3600 {
			errs = append(errs, field.Invalid(p.Child("behavior", "scaleDown", "stabilizationWindowSeconds"), w, "must be within 0..3600"))
		}
	}
	return errs
}
