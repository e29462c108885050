package redistest

import (
	"fmt"
	"regexp"
	"sync/atomic"
	"testing"
)

var (
	namespaces atomic.Int64
	unsafeName = regexp.MustCompile(`[^A-Za-z0-9_/.-]`)
)

// Namespace returns a lock namespace no other test of the process uses: prefix, the test's name
// (characters outside [A-Za-z0-9_/.-] replaced) and a sequence number, ending in ':'. Tests that
// share one server keep their keys apart with it.
func Namespace(t testing.TB, prefix string) string {
	return fmt.Sprintf("%s:%s:%d:", prefix, unsafeName.ReplaceAllString(t.Name(), "_"), namespaces.Add(1))
}
