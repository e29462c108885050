package input_test

import (
	"testing"

	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/components/input"
)

func press(s string) tea.KeyPressMsg {
	switch s {
	case "backspace":
		return tea.KeyPressMsg{Code: tea.KeyBackspace}
	case "ctrl+w":
		return tea.KeyPressMsg{Code: 'w', Mod: tea.ModCtrl}
	case "ctrl+u":
		return tea.KeyPressMsg{Code: 'u', Mod: tea.ModCtrl}
	}
	r := []rune(s)[0]
	return tea.KeyPressMsg{Code: r, Text: s}
}

func TestEditing(t *testing.T) {
	m := input.New(common.New(false, true), "/")
	steps := []struct {
		key  string
		want string
	}{
		{"c", "c"}, {"a", "ca"}, {"*", "ca*"}, {"backspace", "ca"}, {" ", "ca "}, {"x", "ca x"},
		{"ctrl+w", "ca "}, {"ctrl+u", ""}, {"backspace", ""},
	}
	for _, s := range steps {
		m.Update(press(s.key))
		if got := m.Value(); got != s.want {
			t.Fatalf("after %q: Value() = %q, want %q", s.key, got, s.want)
		}
	}
	if changed := m.Update(tea.PasteMsg{Content: "owner:svc\n"}); !changed || m.Value() != "owner:svc" {
		t.Fatalf("paste: Value() = %q (changed %v), want %q", m.Value(), changed, "owner:svc")
	}
}
