package deploy

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// TestPodSecurity evaluates every rendered pod with the Pod Security
// admission's own checks (k8s.io/pod-security-admission, the code the API
// server runs): infill's pod passes the restricted level, so it runs in a
// namespace that enforces it; the GPU backends, whose images run as root,
// pass baseline (docs/deploy.md says so).
func TestPodSecurity(t *testing.T) {
	t.Parallel()
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, vs := range valueSets(t) {
		t.Run(vs.name, func(t *testing.T) {
			r := renderRelease(t, vs.vals)
			for _, o := range r.objs {
				var meta metav1.ObjectMeta
				var spec *corev1.PodSpec
				level := psapi.LevelBaseline
				switch x := o.obj.(type) {
				case *appsv1.Deployment:
					meta, spec, level = x.Spec.Template.ObjectMeta, &x.Spec.Template.Spec, psapi.LevelRestricted
				case *appsv1.StatefulSet:
					meta, spec = x.Spec.Template.ObjectMeta, &x.Spec.Template.Spec
				default:
					continue
				}
				lv := psapi.LevelVersion{Level: level, Version: psapi.LatestVersion()}
				res := policy.AggregateCheckResults(eval.EvaluatePod(lv, &meta, spec))
				if !res.Allowed {
					t.Errorf("%s %s: Pod Security %s refuses it: %s: %s", o.kind, o.meta.GetName(), level, res.ForbiddenReason(), res.ForbiddenDetail())
				}
				if level == psapi.LevelBaseline {
					// docs/deploy.md: "a namespace at the restricted level refuses them".
					strict := psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()}
					if policy.AggregateCheckResults(eval.EvaluatePod(strict, &meta, spec)).Allowed {
						t.Errorf("%s %s passes restricted: docs/deploy.md says the backends do not", o.kind, o.meta.GetName())
					}
				}
			}
		})
	}
}
