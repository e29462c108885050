package tui

import (
	"testing"

	"github.com/locktui/locktui/internal/testsupport"
)

// TestMain drops go-redis's log of failed dials (the tests that stop a server make it log
// every one) and checks for leaked goroutines.
func TestMain(m *testing.M) { testsupport.Main(m, testsupport.MainOptions{FailedDials: true}) }
