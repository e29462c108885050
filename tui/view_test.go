package tui

import (
	"image/color"
	"regexp"
	"testing"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/locktui/locktui/tui/store"
)

// colourSGR matches a foreground or background colour in an escape sequence.
var colourSGR = regexp.MustCompile(`\x1b\[[0-9;]*(3[0-9]|4[0-9]|9[0-7]|10[0-7])(;[0-9;]*)?m`)

func TestNoColorRendersNoColour(t *testing.T) {
	m := newTestModel(t, Config{}) // the test models run with NoColor
	connected(m)
	feed(m, sampleStore())
	for _, k := range []string{"1", "2", "3", "4", "?"} {
		press(m, k)
		assert.False(t, colourSGR.MatchString(m.View().Content), "view %s has a colour", k)
		press(m, "esc")
	}
	for st, style := range m.common.Styles.States {
		_, none := style.GetForeground().(lipgloss.NoColor)
		assert.True(t, none, "state %v has a colour", st)
	}
}

func TestNoColorFromEnvironment(t *testing.T) {
	t.Setenv("NO_COLOR", "yes") // any non-empty value, per no-color.org
	cfg := Config{}.withDefaults()
	assert.True(t, cfg.NoColor)
}

func TestBackgroundPicksLightOrDarkPalette(t *testing.T) {
	m := newTestModel(t, Config{})
	m.cfg.NoColor = false
	m.Update(tea.BackgroundColorMsg{Color: color.White})
	light := m.common.Styles.State(store.StateNoTTL).GetForeground()
	m.Update(tea.BackgroundColorMsg{Color: color.Black})
	dark := m.common.Styles.State(store.StateNoTTL).GetForeground()
	require.NotNil(t, light)
	assert.NotEqual(t, light, dark, "light and dark terminals get different colours")
}

func TestSamplingStatesItsCost(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	feed(m, sampleStore())
	cmd := press(m, "c")
	require.NotNil(t, cmd, "sampling starts reading")
	require.NotNil(t, m.sampler)
	assert.Equal(t, "stuck:job", m.sampler.Keys()[0], "the selected key first")
	assert.Len(t, m.sampler.Keys(), 4, "the keys on screen")
	out := screen(m)
	assert.Contains(t, out, "sampling 30s: +33 cmds/s", "4 keys × 2 commands × 4/s + INFO")
	press(m, "c")
	assert.Nil(t, m.sampler)
	assert.Contains(t, screen(m), "sampling stopped")
}

func TestEnterOnDetailAndBack(t *testing.T) {
	m := newTestModel(t, Config{})
	connected(m)
	feed(m, sampleStore())
	press(m, "4")
	assert.Equal(t, pageDetail, m.active)
	assert.Equal(t, "stuck:job", m.query.Detail, "4 shows the selected lock")
	feed(m, sampleStore())
	out := screen(m)
	assert.Contains(t, out, "never expires")
	assert.Contains(t, out, "NO TTL")
	press(m, "esc")
	assert.Equal(t, pageLocks, m.active)
}

func TestKeysBeforeTheFirstView(t *testing.T) {
	m := newTestModel(t, Config{})
	for _, k := range []string{"c", "d", "D", "enter", "s", "4", "3", "c", "2", "enter", "/", "x", "enter", "?"} {
		press(m, k) // nothing to act on yet: no key may crash
	}
	assert.Contains(t, screen(m), "Keys")
}
