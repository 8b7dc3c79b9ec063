package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"

	"github.com/replicakit/replicakit/vmprovider/vsphere"
)

// tlsPair returns the paths of the tls.crt and tls.key that dir holds, as
// a kubernetes.io/tls Secret is mounted, or an error naming the one it
// lacks.
func tlsPair(dir string) (crt, key string, err error) {
	crt, key = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for _, f := range []string{crt, key} {
		if _, err := os.Stat(f); err != nil {
			return crt, key, err
		}
	}
	return crt, key, nil
}

// clientCertificate returns a vsphere.Config.ClientCertificate reading
// the pair dir holds at each login, once it has read it now: a pair that
// does not load fails at start, not at the first login.
func clientCertificate(dir string) (func(context.Context) (tls.Certificate, error), error) {
	crt, key, err := tlsPair(dir)
	if err != nil {
		return nil, err
	}
	if _, err := tls.LoadX509KeyPair(crt, key); err != nil {
		return nil, fmt.Errorf("client certificate in %s: %w", dir, err)
	}
	return vsphere.CertificateFiles(crt, key), nil
}
