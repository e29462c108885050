package table

import tea "charm.land/bubbletea/v2"

// Selection keeps the cursor on one row, named by its id, while the rows are re-sorted,
// filtered or refreshed. Pages hold one and call SetRows after every new view and Update for
// every message; the zero value selects the first row shown.
type Selection struct {
	id string
}

// ID returns the id of the selected row ("" before any row was shown).
func (s *Selection) ID() string { return s.id }

// SetRows tells m about n rows, where idAt(i) is the id of row i, and moves the cursor to the
// selected row if it is still there; otherwise the row now under the cursor becomes the
// selection. indexOf, when not nil, finds a row by id faster than a scan (large tables).
func (s *Selection) SetRows(m *Model, n int, idAt func(i int) string, indexOf func(id string) int) {
	m.SetRows(n)
	if n == 0 {
		return
	}
	if c := m.Cursor(); s.id != "" && c < n && idAt(c) == s.id {
		return
	}
	i := -1
	if s.id != "" {
		if indexOf != nil {
			i = indexOf(s.id)
		} else {
			for j := 0; j < n && i < 0; j++ {
				if idAt(j) == s.id {
					i = j
				}
			}
		}
	}
	if i >= 0 {
		m.SetCursor(i)
		return
	}
	s.id = idAt(m.Cursor())
}

// Reset forgets the selection: the next SetRows selects the row under the cursor.
func (s *Selection) Reset() { s.id = "" }

// Update moves m's cursor for msg, selects the row it lands on and reports whether msg moved
// the cursor.
func (s *Selection) Update(m *Model, msg tea.Msg, n int, idAt func(i int) string) bool {
	if m.Update(msg) && n > 0 {
		s.id = idAt(m.Cursor())
		return true
	}
	return false
}
