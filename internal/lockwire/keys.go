package lockwire

import "strings"

// RecordKey is the key of the holder record of lock key rk: outside every namespace (under
// "locktui:"), and in rk's Cluster slot. A hash tag in rk is kept as the record's own; without
// one, rk itself is the tag. (A key that contains "}" but no hash tag cannot have a record in its
// slot: on a Cluster its scripts fail with CROSSSLOT.) The name changed when the record became a
// string (a hash under ":holder" before), so that older clients never read one they cannot parse.
func RecordKey(rk string) string { return sideKey(rk, "hold") }

// QueueKeys are the keys of the wait queue of lock key rk and of its tickets (provider/queue.go):
// outside every namespace and in rk's Cluster slot, as RecordKey.
func QueueKeys(rk string) (queue, tickets string) {
	return sideKey(rk, "queue"), sideKey(rk, "tickets")
}

// WaitersKey is the key of the contention marker of lock key rk: it exists while a waiting call
// of ours may sleep between attempts on the lock or a share record lives, and only then do the
// scripts that free the lock announce it. Outside every namespace and in rk's Cluster slot, as
// RecordKey.
func WaitersKey(rk string) string { return sideKey(rk, "waiting") }

// ShareKey is the key of the share record of lock key rk (provider/share.go): outside every
// namespace and in rk's Cluster slot, as RecordKey.
func ShareKey(rk string) string { return sideKey(rk, "share") }

// sideKey is the key of the side record kind of lock key rk: "locktui:{<rk>}:<kind>", or, when
// rk has a hash tag, "locktui:{<tag>}:<kind>:<rk>", so it is outside every namespace and in rk's
// Cluster slot.
func sideKey(rk, kind string) string {
	if tag, ok := hashTag(rk); ok {
		return "locktui:{" + tag + "}:" + kind + ":" + rk
	}
	return "locktui:{" + rk + "}:" + kind
}

// hashTag returns the part of key that Redis Cluster hashes when it is not the whole key: the
// text between the first "{" and the first "}" after it, if not empty.
func hashTag(key string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return "", false
	}
	return key[open+1 : open+1+end], true
}

// FreeChannel is the pub/sub channel on which the scripts announce that they freed a lock of
// namespace: "locktui:free:" + namespace, outside the namespace.
func FreeChannel(namespace string) string { return "locktui:free:" + namespace }

// LiteralPattern escapes s so that it matches itself literally in a Redis glob pattern (SCAN
// MATCH, PSUBSCRIBE).
func LiteralPattern(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
