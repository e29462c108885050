package input_test

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/locktui/locktui/tui/common"
	"github.com/locktui/locktui/tui/components/input"
)

var named = map[string]tea.KeyPressMsg{
	"backspace": {Code: tea.KeyBackspace},
	"left":      {Code: tea.KeyLeft},
	"right":     {Code: tea.KeyRight},
	"home":      {Code: tea.KeyHome},
	"end":       {Code: tea.KeyEnd},
	"delete":    {Code: tea.KeyDelete},
	"alt+left":  {Code: tea.KeyLeft, Mod: tea.ModAlt},
	"ctrl+a":    {Code: 'a', Mod: tea.ModCtrl},
	"ctrl+e":    {Code: 'e', Mod: tea.ModCtrl},
	"ctrl+k":    {Code: 'k', Mod: tea.ModCtrl},
	"ctrl+u":    {Code: 'u', Mod: tea.ModCtrl},
	"ctrl+w":    {Code: 'w', Mod: tea.ModCtrl},
	"alt+d":     {Code: 'd', Mod: tea.ModAlt},
}

func press(s string) tea.KeyPressMsg {
	if k, ok := named[s]; ok {
		return k
	}
	return tea.KeyPressMsg{Code: []rune(s)[0], Text: s}
}

var editingTests = []struct {
	name string
	keys []string
	want string
}{
	{"typing appends", []string{"c", "a", "*"}, "ca*"},
	{"backspace deletes a character", []string{"c", "a", "backspace"}, "c"},
	{"ctrl+w deletes a word", []string{"c", "a", " ", "x", "ctrl+w"}, "ca "},
	{"ctrl+u clears before the cursor", []string{"c", "a", "ctrl+u", "backspace"}, ""},
	{"left moves the cursor: typing inserts there", []string{"c", "t", "left", "a"}, "cat"},
	{"home and end", []string{"a", "r", "t", "home", "c", "end", "s"}, "carts"},
	{"ctrl+a and ctrl+k cut to the end", []string{"c", "a", "r", "t", "ctrl+a", "right", "ctrl+k"}, "c"},
	{"delete removes the character under the cursor", []string{"c", "x", "a", "left", "left", "delete"}, "ca"},
	{"alt+left moves by word, alt+d deletes one forward", []string{"o", "w", "n", " ", "c", "a", "r", "t", "alt+left", "alt+d"}, "own "},
}

func TestEditing(t *testing.T) {
	for _, tc := range editingTests {
		t.Run(tc.name, func(t *testing.T) {
			m := input.New(common.New(false, true), "/")
			for _, k := range tc.keys {
				m.Update(press(k))
			}
			if got := m.Value(); got != tc.want {
				t.Errorf("after %q: Value() = %q, want %q", tc.keys, got, tc.want)
			}
		})
	}
}

func TestUpdateReportsChangesOnly(t *testing.T) {
	m := input.New(common.New(false, true), "/")
	if !m.Update(press("c")) {
		t.Error("typing: Update() = false, want true")
	}
	if m.Update(press("left")) {
		t.Error("moving the cursor: Update() = true, want false")
	}
}

func TestPasteInsertsAtTheCursorWithoutTheLineBreak(t *testing.T) {
	m := input.New(common.New(false, true), "/")
	m.SetValue("owner:")
	m.Update(press("home"))
	if changed := m.Update(tea.PasteMsg{Content: "=k\n"}); !changed || m.Value() != "=kowner:" {
		t.Fatalf("paste: Value() = %q (changed %v), want %q", m.Value(), changed, "=kowner:")
	}
}

func TestCharLimit(t *testing.T) {
	m := input.New(common.New(false, true), ":")
	m.CharLimit = 3
	m.Update(tea.PasteMsg{Content: "locks"})
	if got := m.Value(); got != "loc" {
		t.Errorf("Value() = %q, want %q", got, "loc")
	}
}

func TestViewShowsPromptTextOrPlaceholderWithinWidth(t *testing.T) {
	m := input.New(common.New(false, true), "/")
	m.Placeholder = "key or glob"
	if got := ansi.Strip(m.View(40)); !strings.HasPrefix(got, "/") || !strings.Contains(got, "key or glob") {
		t.Errorf("View() = %q, want the prompt and the placeholder", got)
	}
	m.SetValue(strings.Repeat("k", 100))
	if got := ansi.Strip(m.View(40)); ansi.StringWidth(got) > 40 || !strings.HasPrefix(got, "/k") {
		t.Errorf("View() = %q (width %d), want the prompt and the text within 40 columns", got, ansi.StringWidth(got))
	}
}
