package common_test

import (
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/stretchr/testify/assert"

	"github.com/locktui/locktui/provider"
	"github.com/locktui/locktui/tui/common"
)

func TestHolderShortensHostThenProgramAndKeepsThePID(t *testing.T) {
	h := provider.Holder{Host: "ip-10-0-12-34", PID: 4242, Program: "medusa-worker", Client: provider.ClientBridge}
	cases := []struct {
		width int
		want  string
	}{
		{40, "medusa-worker/4242@ip-10-0-12-34"},
		{32, "medusa-worker/4242@ip-10-0-12-34"},
		{26, "medusa-worker/4242@ip-…-34"},
		{22, "medusa-worker/4242@i…4"},
		{21, "medusa-worker/4242"},
		{15, "medu…orker/4242"},
	}
	for _, c := range cases {
		got := common.Holder(h, c.width)
		assert.Equal(t, c.want, got, "width %d", c.width)
		assert.LessOrEqual(t, ansi.StringWidth(got), c.width)
	}
	assert.Equal(t, "?/?@?", common.Holder(provider.Holder{Client: provider.ClientBridge}, 20), "a bridge client that did not say")
	assert.Equal(t, `"a\x1b"/1@h`, common.Holder(provider.Holder{Program: "a\x1b", PID: 1, Host: "h"}, 20), "escaped")
}
