package operator_test

import (
	"context"
	"testing"

	"github.com/locktui/locktui/internal/testsupport/locktest"
	"github.com/locktui/locktui/provider"
)

// wait and poll bound the suite's waits (locktest.Wait, locktest.Poll); ctx is locktest.Ctx.
const wait, poll = locktest.Wait, locktest.Poll

func ctx(t *testing.T) context.Context { return locktest.Ctx(t) }

// env is one test's view of a Redis (locktest.Env): a provider that takes locks in a fresh
// namespace, an operator's Inspector on the same namespace (each on a client of its own, as two
// processes would be; hooks on the Inspector go on IC) and a raw client for assertions.
type env = locktest.Env

// newEnv returns an env on the shared server in a fresh namespace; opts, which may be nil, are
// the provider's.
func newEnv(t *testing.T, opts *provider.Options) *env { return locktest.New(t, shared, opts) }
