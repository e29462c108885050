package bench_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/internal/bench"
)

func TestSelect(t *testing.T) {
	all, err := bench.SelectScenarios("")
	require.NoError(t, err)
	assert.Len(t, all, 4)
	two, err := bench.SelectScenarios("contended_8x1ms, uncontended_1")
	require.NoError(t, err)
	assert.Equal(t, "contended_8x1ms", two[0].Name)
	assert.Equal(t, "uncontended_1", two[1].Name)
	_, err = bench.SelectScenarios("uncontended_2")
	assert.ErrorContains(t, err, `unknown scenario "uncontended_2"`)

	impls, err := bench.SelectImpls("stock")
	require.NoError(t, err)
	require.Len(t, impls, 1)
	assert.Equal(t, "stock", impls[0].Name())
	_, err = bench.SelectImpls("go,java")
	assert.ErrorContains(t, err, `unknown implementation "java"`)
	_, err = bench.SelectImpls("go,go")
	assert.ErrorContains(t, err, `implementation "go" named twice`)
	_, err = bench.SelectScenarios("uncontended_1,uncontended_1")
	assert.ErrorContains(t, err, `scenario "uncontended_1" named twice`)
}
