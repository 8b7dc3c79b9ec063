package replicaset

import (
	"hash/fnv"
	"strings"
)

// HashRevision returns a revision naming data, such as the encoding of the
// template replicas are made from (Spec.Revision, Replica.Revision): ten
// characters from an alphabet of consonants and digits, so that no
// revision reads as a word, valid as a Kubernetes label value and as a
// vSphere ExtraConfig value. The same data gives the same revision on
// every machine and in every version of replicakit; different data gives
// another revision but for hash collisions (64 bits of FNV-1a, spelled in
// about 47 of them).
//
// The binding (package replicaset/kube) and vmprovider.TemplateRevision
// both spell their revisions with it.
func HashRevision(data []byte) string {
	h := fnv.New64a()
	_, _ = h.Write(data)
	return spellRevision(h.Sum64())
}

// revisionAlphabet spells revisions without vowels, as Kubernetes'
// rand.SafeEncodeString does.
const revisionAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// revisionLen is how many characters a revision has.
const revisionLen = 10

// spellRevision spells the low bits of h in revisionAlphabet.
func spellRevision(h uint64) string {
	var b strings.Builder
	b.Grow(revisionLen)
	for range revisionLen {
		b.WriteByte(revisionAlphabet[h%uint64(len(revisionAlphabet))])
		h /= uint64(len(revisionAlphabet))
	}
	return b.String()
}
