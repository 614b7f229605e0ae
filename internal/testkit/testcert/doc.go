// Package testcert makes self-signed TLS certificates for tests: a server's certificate and key
// in PEM files, and a pool that trusts it.
package testcert
