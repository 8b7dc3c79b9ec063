package kube

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/replicakit/replicakit/replicaset"
)

// DeletesUnread reports whether r deletes children through its
// childDeleter: SetupWithManager took the manager's own, unwrapped client.
func DeletesUnread[O, C client.Object](r *Reconciler[O, C]) bool { return r.deleter != nil }

// DeleteChild deletes the child called name in owner's namespace, as a
// pass that planned to delete it with the given UID would.
func DeleteChild[O, C client.Object](ctx context.Context, r *Reconciler[O, C], owner O, name, uid string) error {
	return (&actuator[O, C]{r: r, owner: owner}).Delete(ctx, replicaset.Replica{Name: name, UID: uid})
}

// ReadsInformerIndex reports whether r reads children from the child
// informer's indexer: SetupWithManager took the manager's own cache.
func ReadsInformerIndex[O, C client.Object](r *Reconciler[O, C]) bool { return r.childIndexer != nil }
