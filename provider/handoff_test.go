package provider_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/provider"
)

// TestAKeyFreedHereGoesToTheCallThatWaitedNotToANewcomer: a holder releases a key that another
// call of this provider waits for, and at once calls for the key again (as a bridge client does
// whose execute does not await its release). The waiter, woken by the release, gets the key
// first: the newcomer's attempt defers to it instead of racing its wake-up.
func TestAKeyFreedHereGoesToTheCallThatWaitedNotToANewcomer(t *testing.T) {
	waiting := make(chan string, 16)
	obs := provider.ObserverFunc(func(ev provider.Event) {
		if ev.Kind == provider.EventWaiting {
			waiting <- ev.Key
		}
	})
	// The waiter's backoff is long: only the release's wake-up can let it in in time.
	e := newEnv(t, &provider.Options{DefaultRetryInterval: time.Hour, MaximumRetryInterval: time.Hour, Observer: obs})
	for round := range 10 {
		key := fmt.Sprintf("handoff%d", round)
		order := make(chan string, 2)
		held, release := make(chan struct{}), make(chan struct{})
		newcomer := make(chan error, 1)
		go func() {
			err := e.P.Execute(ctx(t), []string{key}, func(context.Context) error {
				close(held)
				<-release
				return nil
			}, provider.ExecuteOptions{})
			if err != nil {
				newcomer <- err
				return
			}
			newcomer <- e.P.Execute(ctx(t), []string{key}, func(context.Context) error {
				order <- "newcomer"
				return nil
			}, provider.ExecuteOptions{Timeout: 5 * time.Second})
		}()
		<-held
		waiter := make(chan error, 1)
		go func() {
			waiter <- e.P.Execute(ctx(t), []string{key}, func(context.Context) error {
				order <- "waiter"
				return nil
			}, provider.ExecuteOptions{Timeout: 5 * time.Second})
		}()
		for k := range waiting { // the waiter waits (the events of earlier rounds' newcomers are skipped)
			if k == key {
				break
			}
		}
		close(release)
		require.NoError(t, <-waiter)
		require.NoError(t, <-newcomer)
		require.Equal(t, "waiter", <-order, "round %d: the call that waited gets the freed key first", round)
	}
}
