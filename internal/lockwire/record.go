package lockwire

import "strings"

// recordFields are the fields of a holder record in the order they are stored, joined by NUL
// bytes with the owner after the last (lib.lua says what each means). Defined here once; the
// scripts get them in front of lib.lua (recordConstants).
var recordFields = []string{"claim", "at", "since", "fence", "host", "pid", "prog", "kind", "re", "prev", "lease", "revoked"}

// recordConstants defines recordFields for the scripts, as RECORD_FIELDS.
var recordConstants = "local RECORD_FIELDS = {'" + strings.Join(recordFields, "', '") + "'}\n"

// RecordFields splits the text of a holder record into its fields, the empty ones left out and
// the owner as "owner"; nil when text is not a record.
func RecordFields(text string) map[string]string {
	parts := strings.SplitN(text, "\x00", len(recordFields)+1)
	if len(parts) != len(recordFields)+1 {
		return nil
	}
	fields := make(map[string]string, len(parts))
	for i, name := range recordFields {
		if parts[i] != "" {
			fields[name] = parts[i]
		}
	}
	fields["owner"] = parts[len(recordFields)]
	return fields
}
