// Package lockwire is what package provider (the holders' API) and package operator (the
// operators' API) share about how locktui keeps its locks in Redis (docs/data-model.md): the side
// keys of a lock (keys.go), the holder record's format (record.go), the Lua scripts, embedded
// from scripts/ (scripts.go), running them over many keys (eval.go), the walk of a namespace
// (walk.go) and the text of keys and owners as the tools show it (text.go). Nothing here is part
// of either API.
package lockwire
