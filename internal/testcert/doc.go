// Package testcert makes self-signed certificates for tests: a server's,
// a client's to log in with, an authority that signed nothing of the
// server's.
package testcert
