// Package netcut is a TCP proxy whose link can be cut and healed, for
// tests of what a client does when its server stops answering.
package netcut
