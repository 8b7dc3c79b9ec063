package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Pods need a kubelet to become Running and Ready, and a rollout moves
// only as its new Pods become available. kwok (sigs.k8s.io/kwok, built
// into bin/ by `make tools`), as Kubernetes' scalability tests use it,
// plays the kubelet for the Pods on fake Nodes: the rollouts' Pods are
// made with spec.nodeName set to kwokNode, so no scheduler is needed, and
// kwok marks each Running and Ready readyDelay after it sees the Pod, the
// same for every controller measured. A Pod being deleted it removes
// deleteDelay after it sees it so (by default at once, as a kubelet does
// once a container has exited): the controllers' deletes are graceful
// (the Pods are on a Node), and kwok's final delete removes the Pod.

// kwokParallelism is how many Pod stages kwok plays at once (its
// podPlayStageParallelism; its default, 4, makes kwok itself the pace of a
// rollout: each stage waits on one request to the API server).
const kwokParallelism = 32

// kwokNode is the fake Node every rollout Pod is bound to.
const kwokNode = "kwok-node-0"

// kwokAnnotation marks the Nodes kwok manages
// (--manage-nodes-with-annotation-selector).
const kwokAnnotation = "kwok.x-k8s.io/node"

// kwokStages is kwok's configuration. Its options are kwok's defaults
// but for PARALLELISM (kwokParallelism): a KwokConfiguration in the file
// replaces the defaults, so every parallelism is given. Its stages are
// kwok's own "fast" ones (kustomize/stage/node/fast and
// kustomize/stage/pod/fast in kwok v0.8.0): a Node made Ready at once, a
// Pod made Running and Ready after READY_DELAY_MS milliseconds, and a Pod
// being deleted removed after DELETE_DELAY_MS (the delays are added here;
// the fast stages have none). kwok's other stages (heartbeats, Job
// completion, init containers) are left out: nothing here needs them.
const kwokStages = `apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokConfiguration
options:
  podPlayStageParallelism: PARALLELISM
  nodePlayStageParallelism: 4
  nodeLeaseParallelism: 4
  podsOnNodeSyncParallelism: 1
  enablePodsOnNodeSyncListPager: true
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: node-initialize
spec:
  resourceRef:
    apiGroup: v1
    kind: Node
  selector:
    matchExpressions:
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values:
      - 'True'
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      {{ range NodeConditions }}
      - lastHeartbeatTime: {{ $now | Quote }}
        lastTransitionTime: {{ $now | Quote }}
        message: {{ .message | Quote }}
        reason: {{ .reason | Quote }}
        status: {{ .status | Quote }}
        type: {{ .type | Quote }}
      {{ end }}
      allocatable:
        cpu: 1k
        memory: 1Ti
        pods: 1M
      capacity:
        cpu: 1k
        memory: 1Ti
        pods: 1M
      phase: Running
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-ready
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values:
      - 'Pending'
    - key: '.status.conditions.[] | select( .type == "Ready" ) | .status'
      operator: 'NotIn'
      values:
      - 'True'
  delay:
    durationMilliseconds: READY_DELAY_MS
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Initialized
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: Ready
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: ContainersReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}
      {{ end }}
      {{ with NodeIPWith .spec.nodeName }}
      hostIP: {{ . | Quote }}
      {{ end }}
      {{ with PodIPWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      podIP: {{ . | Quote }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: pod-delete
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'Exists'
  delay:
    durationMilliseconds: DELETE_DELAY_MS
  next:
    delete: true
`

// startKwok creates the fake Node, writes kwok's stages with readyDelay
// and deleteDelay, starts bin/kwok on the API server and waits until it has made the Node
// Ready. kwok's log goes to a temporary file, shown in the error if kwok
// does not come up.
func (b *bench) startKwok(ctx context.Context, readyDelay, deleteDelay time.Duration) (stop func(), pid int, err error) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: kwokNode,
		Annotations: map[string]string{kwokAnnotation: "fake"},
		Labels:      map[string]string{"type": "kwok", corev1.LabelHostname: kwokNode}}}
	if _, err := b.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, 0, err
	}
	dir, err := os.MkdirTemp("", "benche2e-kwok-")
	if err != nil {
		return nil, 0, err
	}
	config := filepath.Join(dir, "stages.yaml")
	ms := func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
	stages := strings.NewReplacer("READY_DELAY_MS", ms(readyDelay), "DELETE_DELAY_MS", ms(deleteDelay),
		"PARALLELISM", strconv.Itoa(kwokParallelism)).Replace(kwokStages)
	if err := os.WriteFile(config, []byte(stages), 0o600); err != nil {
		return nil, 0, err
	}
	logf, err := os.Create(filepath.Join(dir, "kwok.log"))
	if err != nil {
		return nil, 0, err
	}
	cmd := exec.Command(filepath.Join(b.env.BinDir, "kwok"),
		"--kubeconfig="+b.env.Kubeconfig,
		"--config="+config,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+kwokAnnotation+"=fake",
		"--cidr=10.0.0.0/16", // room for every Pod of a rollout (the default is a /24)
		"--node-ip=10.255.0.1",
		"--v=WARN",
	)
	// HOME: kwok also reads ~/.kwok/kwok.yaml when there is one; it must
	// read only the stages above.
	cmd.Env = append(os.Environ(), "HOME="+dir)
	// Teardown of a temporary folder: a leftover is harmless.
	stop, err = startLogged(cmd, logf, func() { _ = os.RemoveAll(dir) })
	if err != nil {
		return nil, 0, err
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		n, err := b.cs.CoreV1().Nodes().Get(ctx, kwokNode, metav1.GetOptions{})
		if err != nil {
			continue
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return stop, cmd.Process.Pid, nil
			}
		}
	}
	log, _ := os.ReadFile(logf.Name())
	stop()
	return nil, 0, fmt.Errorf("kwok did not make Node %s Ready in 60s; its log:\n%s", kwokNode, log)
}
