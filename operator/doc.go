// Package operator is the operator's side of locktui's locks, for tools that watch and unstick
// them (the console, the CLI, the audit trail): it reads every lock of a namespace with the
// holder record beside it, and force-releases locks, telling a live lease's holder first. A
// service that holds locks needs only package provider.
//
// An Inspector reads with SCAN … MATCH and a few plain reads per lock (ReadsPerKey), paced by
// the caller when it asks (ScanOptions.Pace: the console's and the CLI's budget,
// docs/console-cost.md); it never uses KEYS or MONITOR. Its force-releases (ForceReleaseOwner,
// ForceReleaseHold, ForceReleaseAny, ReleaseAllWith) check and act in one atomic script run per
// key (revoke.lua): only the owner, or the very hold, the operator saw is cut off, and in mode
// TellHolderFirst a live lease of ours is revoked rather than deleted: its holder ends its lease
// at once and releases the key (docs/safety.md, "Force-release").
//
// Holder records are written by the provider's scripts (docs/data-model.md has their format);
// Lock.Record and HolderRecord read them. Stock Medusa writes none: NoHolderRecord is what the
// tools say then.
package operator
