// Package input is the console's one-line prompt (the "/" filter and the ":" command), on
// bubbles' textinput, with the line-editing keys users expect: left/right and ctrl+b/ctrl+f,
// alt+left/alt+right by word, home/end and ctrl+a/ctrl+e, backspace and delete, ctrl+w and
// alt+backspace a word back, alt+d a word forward, ctrl+u and ctrl+k to the start and the end.
//
// Two choices differ from textinput's defaults. The cursor does not blink: a blink is a timer
// every half second, and the console schedules nothing while idle. ctrl+v does not read the
// system clipboard (textinput would run xclip, xsel or wl-paste for it): the terminal's own
// paste (bracketed paste) arrives as a tea.PasteMsg and is inserted at the cursor, its
// trailing line break dropped.
package input

import (
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"github.com/locktui/locktui/tui/common"
)

// Model is the prompt and its text.
type Model struct {
	common *common.Common
	// Placeholder is shown dimmed while the text is empty.
	Placeholder string
	// CharLimit caps the length in runes (0: none).
	CharLimit int
	ti        textinput.Model
}

// New returns an empty input with prompt (such as "/"), focused.
func New(c *common.Common, prompt string) *Model {
	ti := textinput.New()
	ti.Prompt = prompt
	ti.KeyMap.Paste = key.NewBinding(key.WithDisabled())
	ti.Focus()
	return &Model{common: c, ti: ti}
}

// Value returns the text.
func (m *Model) Value() string { return m.ti.Value() }

// SetValue replaces the text and puts the cursor at its end.
func (m *Model) SetValue(s string) {
	m.ti.CharLimit = m.CharLimit
	m.ti.SetValue(s)
	m.ti.CursorEnd()
}

// Update edits the text with a key press or a paste and reports whether the text changed
// (a cursor movement is no change).
func (m *Model) Update(msg tea.Msg) bool {
	if paste, ok := msg.(tea.PasteMsg); ok {
		paste.Content = strings.TrimRight(paste.Content, "\r\n")
		msg = paste
	}
	before := m.ti.Value()
	m.ti.CharLimit = m.CharLimit
	m.ti, _ = m.ti.Update(msg) // no command: the cursor does not blink (see the package doc)
	return m.ti.Value() != before
}

// View renders the prompt, the text with a block cursor, or the placeholder, cut to width.
func (m *Model) View(width int) string {
	st := m.common.Styles
	styles := textinput.DefaultDarkStyles()
	styles.Cursor.Blink, styles.Cursor.Color = false, nil // reverse video, no colour of its own
	styles.Focused.Prompt = st.HelpKey
	styles.Focused.Text = st.Row
	styles.Focused.Placeholder = st.Dim
	m.ti.SetStyles(styles)
	m.ti.Placeholder = m.Placeholder
	m.ti.SetWidth(max(width-len([]rune(m.ti.Prompt))-1, 1))
	return common.Truncate(m.ti.View(), width)
}
