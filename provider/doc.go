// Package provider is a Redis lock provider that is wire- and behaviour-compatible with the stock
// Medusa provider @medusajs/locking-redis 2.21.2, so Go services and Medusa's Node services
// exclude each other on the same keys.
//
// Wire format (identical to stock): the Redis key is Namespace+key (default "medusa_lock:"), the
// value is the owner id as a plain string (default owner "*", Execute owners
// "execute:<uuid v4>"), and TTLs are whole seconds set with SET … EX. The Lua scripts
// (internal/lockwire/scripts/) carry the logic of stock's acquireLock, extendLock and
// releaseLock.
//
// This package is what a service that holds locks needs. Reading every lock of a namespace with
// its holder, and force-releasing locks for an operator, is package operator's (the console and
// the CLI use it).
//
// Fixed stock defects, without touching the wire format:
//   - a failed multi-key acquisition gives back the keys it took; keys the owner already held
//     stay held, with the expiry they had (a re-entry rewrites it; the failed call puts it
//     back), and only where nothing changed since: a later re-entry by the same owner in
//     another process is never undone (see holder records below);
//   - keys are de-duplicated and taken in sorted order, so opposite orders cannot deadlock;
//   - a call that waits keeps the keys it already holds alive (extends them every TTL/3) and,
//     before it reports success, confirms that every key it held while waiting is still its
//     own: a key that expired and was taken meanwhile is waited for again instead of being
//     reported held;
//   - a timed-out Execute gives back every key it took, never another owner's, including a key
//     whose acquisition reply was lost after the script ran (also when go-redis resent the
//     request);
//   - the same owner re-enters its lock also when it queues (AwaitQueue);
//   - ReleaseAll deletes a key only if the owner still matches at delete time (one Lua
//     compare-and-unlink per key, pipelined per SCAN batch), escapes glob characters of the
//     namespace, and scans every master of a Cluster;
//   - a lease is lost locally at its deadline (send time of its last confirmed renewal + TTL
//     less SafetyMargin), whatever the network does, so its holder is told before Redis could
//     let anyone else in;
//   - a release is never sent twice: go-redis resends a request whose reply it lost, which for
//     an owner shared by several processes could delete a lock one of them took in between; the
//     caller gets ErrOutcomeUnknown instead.
//
// Holder records: beside every lock it takes, the provider keeps one small string outside the
// namespace, in the lock's Cluster slot ("locktui:{<redis key>}:hold"), written by the same
// script, expiring and deleted with the lock (docs/data-model.md has every key and its life):
// the owner, the claim (the id of the acquisition call, AcquireOptions.Claim), the expiry that
// call left and, for a re-entry, what the lock was before; and who holds it (Options.Holder:
// host, pid, program, client kind), since when in Redis time, under which fencing token. A
// give-back undoes a call only where the record still names it, and Settle tells a caller that
// lost a reply whether its acquisition holds the keys. Package operator reads the records
// (operator.Lock.Record, operator.Inspector.HolderRecord: locktui get shows them). Stock
// processes and stock's releaseAll never see the records (a lock that a stock process deletes
// leaves its record behind until the expiry it had, or until the key is next taken here when it
// had none; a read ignores a record of another owner, or whose own expiry is not the lock's, as
// when a stock process took the key again under the same owner: see docs/fencing.md, "an owner
// id shared with stock processes").
//
// Fencing tokens: every acquisition that takes a free key gets a token greater than every
// earlier one on that key while the server's clock does not step back (fence.go,
// docs/fencing.md): Lease.FencingToken,
// FencingToken(ctx) in an Execute job, AcquireTokens.
//
// Deliberate differences from stock, at the Go API: a TTL that is not a whole number of seconds
// is rounded up instead of failing with a Redis error; a lease key replaced by a value of another
// type counts as lost instead of being retried forever; Execute logs a failed final release
// instead of returning it (the job did run), and gives its keys back also when the job panics.
//
// Wake-ups (docs/waiting.md): a call waiting for a held key (Acquire with AwaitQueue,
// AcquireLease, Execute) polls with jittered exponential backoff, as stock does, and retries at
// once when the key is freed by anyone: the scripts that free a lock (release, give-back,
// ReleaseAll's unlink, an operator's force-release) PUBLISH it on FreeChannel(namespace) from
// the same script while a waiting call of ours has marked the key (each of its attempts that
// finds the key held does, "locktui:{<redis key>}:waiting"; a release nobody waits for publishes
// nothing), and, on a server with keyspace notifications (notify-keyspace-events with K, g and
// x), stock Medusa's deletes and every expiry are heard too. A Provider listens on one pub/sub
// connection, opened while any of its calls waits and closed when none does, and wakes one of
// its waiters per freed key. Until Redis confirmed that subscription, while it is down, and for
// any message lost, waiting is stock's backoff, unchanged. On a Cluster the PUBLISH reaches
// every node; keyspace notifications are not used there.
//
// Fair queue (opt-in, Options.FairQueue): waiters of every Provider with it are served first
// come, first served on each key, through a queue of tickets beside the lock
// ("locktui:{<redis key>}:queue" and ":tickets", outside the namespace, in the lock's slot,
// expiring with their last ticket). A dead waiter holds the queue up for at most
// QueueTicketTTL plus a third of it. Stock processes do not queue and are never blocked by the
// queue. It is off by default because it costs throughput under contention (every hand-off goes
// to the head, one pub/sub push and one round trip later).
//
// Stock's turns (provider/share.go): while processes that write no holder record (stock Medusa)
// contend for a lock, a waiting call of ours leaves the freed lock to them for 150 ms after each
// 250 ms run of ours; a try-once Acquire is not held back (it takes a free key, as stock's does).
//
// Every call takes a context and honours its cancellation; a Provider is safe for concurrent use
// and holds no global state.
package provider
