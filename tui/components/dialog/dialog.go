// Package dialog is the confirmation dialog of the console's mutations: it names what will be
// done and is answered with "y"; any other key cancels.
package dialog

import (
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/locktui/locktui/tui/common"
)

// Model is a yes/no question with a payload the caller gets back on "y".
type Model struct {
	common  *common.Common
	title   string
	lines   []string
	payload any
	active  bool
	width   int
	height  int
}

// New returns a closed dialog.
func New(c *common.Common) *Model { return &Model{common: c} }

// Open asks title with the explanation lines; payload comes back from Answer.
func (m *Model) Open(title string, lines []string, payload any) {
	m.title, m.lines, m.payload, m.active = title, lines, payload, true
}

// Active reports whether the dialog is open.
func (m *Model) Active() bool { return m.active }

// Answer closes the dialog with the key pressed: it returns the payload and true for "y",
// nil and false for anything else.
func (m *Model) Answer(k tea.KeyPressMsg) (any, bool) {
	m.active = false
	p := m.payload
	m.payload = nil
	if k.String() == "y" {
		return p, true
	}
	return nil, false
}

// SetSize sets the area the dialog is centred in.
func (m *Model) SetSize(width, height int) { m.width, m.height = width, height }

// View renders the dialog centred in its area.
func (m *Model) View() string {
	st := m.common.Styles
	inner := max(min(m.width-4, 72), 10)
	var b strings.Builder
	b.WriteString(st.DialogTitle.Render(common.Truncate(m.title, inner)))
	for _, l := range m.lines {
		b.WriteString("\n" + lipgloss.NewStyle().Width(inner).Render(l))
	}
	b.WriteString("\n\n" + st.HelpKey.Render("y") + " " + st.HelpDesc.Render("confirm") +
		"   " + st.HelpKey.Render("any other key") + " " + st.HelpDesc.Render("cancel"))
	box := st.Dialog.Render(b.String())
	return lipgloss.Place(m.width, m.height, lipgloss.Center, lipgloss.Center, box)
}
