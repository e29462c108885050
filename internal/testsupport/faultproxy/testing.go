package faultproxy

import "testing"

// StartT starts a proxy to target for a test and closes it, with every connection and
// goroutine it has, when the test ends. It fails the test if the proxy cannot listen.
func StartT(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := Start(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
