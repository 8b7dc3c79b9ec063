package kube_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/replicakit/replicakit/replicaset"
	"github.com/replicakit/replicakit/replicaset/kube"
)

// podsInPlace is the in-place part of an Adapter of Pods, for a rollout
// whose Strategy.Method is UpdateInPlaceIfPossible or UpdateInPlaceOnly.
// Importers copy it and embed it in their Adapter:
//
//	type poolAdapter struct{ podsInPlace }
//
// A container's image change restarts the container, which is what a
// power cycle is for a Pod: it is made, by a patch of the Pod, only when
// the planner allows one (within MaxUnavailable). A resources change
// that the container's resize policy takes without a restart
// (NotRequired, the default) is live, and goes through the Pod's resize
// subresource, the only way the API server takes it; one whose policy is
// RestartContainer is a power cycle. Any other change of the template
// needs a new Pod. The API server refuses a resize that would change the
// Pod's QoS class: check that in InPlace too if your templates may. The
// controller needs patch on the subresource, beside the Permissions of
// the package documentation:
//
//	+kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch
type podsInPlace struct{}

var (
	_ kube.InPlaceRollout[*WorkerPool, *corev1.Pod] = podsInPlace{}
	_ kube.InPlaceSubresource[*corev1.Pod]          = podsInPlace{}
)

// InPlace judges by what the kubelet reports the containers run with.
func (podsInPlace) InPlace(pod, want *corev1.Pod) (replicaset.InPlace, string) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending && c.Reason == corev1.PodReasonInfeasible && c.ObservedGeneration == pod.Generation {
			return replicaset.InPlaceNone, "resize infeasible: " + c.Message
		}
	}
	if !onlyImagesAndResources(pod, want) {
		return replicaset.InPlaceNone, "template changed beyond images and resources"
	}
	how, why := replicaset.InPlaceLive, ""
	for _, w := range want.Spec.Containers {
		c := containerOf(pod, w.Name) // there: onlyImagesAndResources
		image, res := c.Image, c.Resources
		if s := statusOf(pod, w.Name); s != nil {
			image, res = s.Image, resourcesOf(s)
		}
		if !sameImage(image, w.Image) {
			how, why = replicaset.InPlacePowerCycle, fmt.Sprintf("container %s image changed from %s to %s", w.Name, image, w.Image)
		} else if restarts(w, resized(res, w.Resources)) {
			how, why = replicaset.InPlacePowerCycle, fmt.Sprintf("container %s resized with a restart", w.Name)
		}
	}
	return how, why
}

// ApplyInPlace sets the containers' images, which restarts them: only
// when a power cycle is allowed. The binding patches the Pod.
func (podsInPlace) ApplyInPlace(pod, want *corev1.Pod, powerCycle bool) bool {
	changed := false
	for _, w := range want.Spec.Containers {
		if c := containerOf(pod, w.Name); powerCycle && c != nil && c.Image != w.Image {
			c.Image, changed = w.Image, true
		}
	}
	return changed
}

// ApplyInPlaceSubresource sets the containers' resources, through the
// Pod's resize subresource; a resize that restarts a container, only when
// a power cycle is allowed.
func (podsInPlace) ApplyInPlaceSubresource(pod, want *corev1.Pod, powerCycle bool) (string, bool) {
	changed := false
	for _, w := range want.Spec.Containers {
		c := containerOf(pod, w.Name)
		if c == nil {
			continue // InPlace said it needs a new Pod
		}
		if names := resized(c.Resources, w.Resources); len(names) > 0 && (powerCycle || !restarts(w, names)) {
			c.Resources.Requests = merged(c.Resources.Requests, w.Resources.Requests)
			c.Resources.Limits = merged(c.Resources.Limits, w.Resources.Limits)
			changed = true
		}
	}
	return "resize", changed
}

// ShowsInPlace: the kubelet reports the Pod's current generation, and
// each container running with want's image and resources. It needs
// kubelets that report status.observedGeneration (Kubernetes 1.34 and
// later: the PodObservedGenerationTracking feature, on by default);
// on older nodes the rollout would wait forever, so compare the
// statuses alone there. A resource the template drops is not compared.
func (podsInPlace) ShowsInPlace(pod, want *corev1.Pod) bool {
	if pod.Status.ObservedGeneration != pod.Generation {
		return false
	}
	for _, w := range want.Spec.Containers {
		s := statusOf(pod, w.Name)
		if s == nil || !sameImage(s.Image, w.Image) || len(resized(resourcesOf(s), w.Resources)) > 0 {
			return false
		}
	}
	return true
}

// onlyImagesAndResources reports whether pod's spec has what want's sets
// (equality.Semantic.DeepDerivative: what want leaves unset, such as
// what the API server defaults, is not compared) but for the containers'
// images and resources.
func onlyImagesAndResources(pod, want *corev1.Pod) bool {
	a, b := want.Spec.DeepCopy(), pod.Spec.DeepCopy()
	for _, s := range []*corev1.PodSpec{a, b} {
		for i := range s.Containers {
			s.Containers[i].Image, s.Containers[i].Resources = "", corev1.ResourceRequirements{}
		}
	}
	return len(a.Containers) == len(b.Containers) && equality.Semantic.DeepDerivative(a, b)
}

// containerOf returns pod's container name, or nil.
func containerOf(pod *corev1.Pod, name string) *corev1.Container {
	i := slices.IndexFunc(pod.Spec.Containers, func(c corev1.Container) bool { return c.Name == name })
	if i < 0 {
		return nil
	}
	return &pod.Spec.Containers[i]
}

// statusOf returns what the kubelet reports of container name, or nil.
func statusOf(pod *corev1.Pod, name string) *corev1.ContainerStatus {
	i := slices.IndexFunc(pod.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool { return s.Name == name })
	if i < 0 {
		return nil
	}
	return &pod.Status.ContainerStatuses[i]
}

// resourcesOf returns the resources the kubelet reports a container runs
// with (none before it reports any).
func resourcesOf(s *corev1.ContainerStatus) corev1.ResourceRequirements {
	if s.Resources == nil {
		return corev1.ResourceRequirements{}
	}
	return *s.Resources
}

// sameImage reports whether image, as the kubelet reports it, is spec's:
// a runtime may report nginx:1.28 as docker.io/library/nginx:1.28.
func sameImage(image, spec string) bool {
	return image == spec || strings.HasSuffix(image, "/"+spec)
}

// resized lists the resources want sets otherwise than have does.
func resized(have, want corev1.ResourceRequirements) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, l := range [][2]corev1.ResourceList{{have.Requests, want.Requests}, {have.Limits, want.Limits}} {
		for n, q := range l[1] {
			if got, ok := l[0][n]; !ok || got.Cmp(q) != 0 {
				out = append(out, n)
			}
		}
	}
	return out
}

// restarts reports whether container c's resize policy restarts it for
// a change of any of names.
func restarts(c corev1.Container, names []corev1.ResourceName) bool {
	return slices.ContainsFunc(c.ResizePolicy, func(p corev1.ContainerResizePolicy) bool {
		return p.RestartPolicy == corev1.RestartContainer && slices.Contains(names, p.ResourceName)
	})
}

// merged returns l with want's quantities set over it.
func merged(l, want corev1.ResourceList) corev1.ResourceList {
	if len(want) == 0 {
		return l
	}
	out := maps.Clone(l)
	if out == nil {
		out = corev1.ResourceList{}
	}
	maps.Copy(out, want)
	return out
}

// A Pod of the older template runs nginx:1.27 with 100m of CPU; the
// template asks for nginx:1.28 and 200m. The image change restarts the
// container (a power cycle); once allowed, the image goes into the Pod
// and the CPU through resize, and the Pod shows the change once its
// kubelet reports both at the Pod's generation.
func Example_podInPlace() {
	cpu := func(q string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(q)}}
	}
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27", Resources: cpu("100m")}}}}
	pod.Generation = 1
	kubelet := func(p *corev1.Pod) { // what it reports once it runs the spec
		c := p.Spec.Containers[0]
		p.Status.ObservedGeneration = p.Generation
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: c.Name, Image: "docker.io/library/" + c.Image, Resources: c.Resources.DeepCopy()}}
	}
	kubelet(pod)
	want := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.28", Resources: cpu("200m")}}}}

	ip := podsInPlace{}
	how, why := ip.InPlace(pod, want)
	fmt.Printf("InPlace: %v (%s)\n", how, why)
	fmt.Println("ApplyInPlace without a power cycle:", ip.ApplyInPlace(pod.DeepCopy(), want, false))
	patched := pod.DeepCopy()
	fmt.Println("ApplyInPlace:", ip.ApplyInPlace(patched, want, true), patched.Spec.Containers[0].Image)
	sub, changed := ip.ApplyInPlaceSubresource(patched, want, true)
	fmt.Println("ApplyInPlaceSubresource:", sub, changed, patched.Spec.Containers[0].Resources.Requests.Cpu())
	_, again := ip.ApplyInPlaceSubresource(patched, want, true)
	fmt.Println("again:", again)

	patched.Generation = 3 // the patch and the resize each raised it
	fmt.Println("shows before the kubelet:", ip.ShowsInPlace(patched, want))
	kubelet(patched)
	fmt.Println("shows after the kubelet:", ip.ShowsInPlace(patched, want))
	// Output:
	// InPlace: PowerCycle (container app image changed from docker.io/library/nginx:1.27 to nginx:1.28)
	// ApplyInPlace without a power cycle: false
	// ApplyInPlace: true nginx:1.28
	// ApplyInPlaceSubresource: resize true 200m
	// again: false
	// shows before the kubelet: false
	// shows after the kubelet: true
}
