package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"sync/atomic"
	"testing"
	"time"
)

// serial numbers the certificates made in a test binary, each apart.
var serial atomic.Int64

// New makes a self-signed certificate from tmpl with a new P-256 key:
// tmpl says what it is for (its subject, addresses, usages, whether it is
// an authority); New gives it a serial number and, when tmpl has none, a
// validity from an hour ago to an hour from now. It fails t on error.
func New(t testing.TB, tmpl x509.Certificate) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl.SerialNumber = big.NewInt(serial.Add(1))
	if tmpl.NotBefore.IsZero() && tmpl.NotAfter.IsZero() {
		tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	}
	der, err := x509.CreateCertificate(rand.Reader, &tmpl, &tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

// Client makes a client certificate named cn, as a solution user logs in
// with.
func Client(t testing.TB, cn string) tls.Certificate {
	t.Helper()
	return New(t, x509.Certificate{Subject: pkix.Name{CommonName: cn}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
}

// PEM returns c's certificate and private key in PEM, as a
// kubernetes.io/tls Secret's tls.crt and tls.key hold them.
func PEM(t testing.TB, c tls.Certificate) (crt, key string) {
	t.Helper()
	k, err := x509.MarshalPKCS8PrivateKey(c.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.Certificate[0]})),
		string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k}))
}
