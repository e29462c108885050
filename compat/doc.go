// Package compat holds the compatibility suite between the Go provider (package provider) and
// the stock Medusa provider, @medusajs/locking-redis 2.21.2 from npm, running side by side on
// one Redis. It has no code of its own, only tests.
//
// The stock provider runs in a Node child process (package internal/testsupport/stocknode, script
// compat/stock/driver.js) built the way Medusa's module loader builds it. The tests prove that
// the two exclude each other on the same keys and read each other's locks:
//
//   - a lock held by one side makes the other fail with the same conflict, and the same owner
//     re-enters across languages (the anonymous owner "*" never does);
//   - release and releaseAll on either side touch only the given owner's locks, whoever took
//     them;
//   - the same logical call writes the same Redis key bytes, value and TTL, and execute owners
//     are "execute:<uuid v4>" with a 60 s lease on both sides;
//   - concurrent Go Execute and stock execute calls on one key serialise; one side waits for the
//     other's lock and gets it once it is released;
//   - a lease taken away mid-job ends the job with the stock "Lost the lock…" conflict on both
//     sides, and the Go inspection API lists stock locks and force-releases them.
//
// The Node packages are pinned in compat/package.json; `make node-deps` (npm ci in compat/)
// installs them. Without node or compat/node_modules the tests fail with an install hint.
package compat
