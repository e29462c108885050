// Package input is the one-line filter input: typing appends, backspace deletes a character,
// ctrl+w a word, ctrl+u the line. (bubbles' textinput would pull in a clipboard module the
// project does not carry, and a filter needs none of it.)
package input

import (
	"strings"
	"unicode"

	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/tui/common"
)

// Model is the input's text and prompt.
type Model struct {
	common      *common.Common
	Prompt      string
	Placeholder string
	// CharLimit caps the length in runes (0: none).
	CharLimit int
	value     []rune
}

// New returns an empty input.
func New(c *common.Common, prompt string) *Model { return &Model{common: c, Prompt: prompt} }

// Value returns the text.
func (m *Model) Value() string { return string(m.value) }

// SetValue replaces the text.
func (m *Model) SetValue(s string) { m.value = []rune(s) }

// Update edits the text with a key press or a paste and reports whether it changed.
func (m *Model) Update(msg tea.Msg) bool {
	before := string(m.value)
	switch msg := msg.(type) {
	case tea.PasteMsg:
		m.insert(msg.Content)
	case tea.KeyPressMsg:
		switch msg.String() {
		case "backspace", "ctrl+h":
			if len(m.value) > 0 {
				m.value = m.value[:len(m.value)-1]
			}
		case "ctrl+u":
			m.value = m.value[:0]
		case "ctrl+w", "alt+backspace":
			v := strings.TrimRightFunc(string(m.value), unicode.IsSpace)
			i := strings.LastIndexFunc(v, unicode.IsSpace)
			m.value = []rune(v[:i+1])
		default:
			if msg.Text != "" && msg.Mod&^(tea.ModShift) == 0 {
				m.insert(msg.Text)
			}
		}
	}
	return string(m.value) != before
}

func (m *Model) insert(s string) {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			continue
		}
		if m.CharLimit > 0 && len(m.value) >= m.CharLimit {
			return
		}
		m.value = append(m.value, r)
	}
}

// View renders the prompt, the text and a block cursor, cut to width.
func (m *Model) View(width int) string {
	st := m.common.Styles
	text := string(m.value)
	out := st.HelpKey.Render(m.Prompt) + text + st.Selected.Render(" ")
	if text == "" && m.Placeholder != "" {
		out += " " + st.Dim.Render(m.Placeholder)
	}
	return common.Truncate(out, width)
}
