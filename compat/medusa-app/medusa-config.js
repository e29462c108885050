// The Medusa configuration of the e2e suite's backend (e2e/medusa_test.go). Everything comes from
// the environment the test sets:
//
//   DATABASE_URL            PostgreSQL database (migrated with `medusa db:migrate`)
//   REDIS_URL               Redis of the event bus, the workflow engine, the cache and the locks
//   MEDUSA_LOCKING          "bridge": the Locking module's provider is compat/medusa-locking-bridge;
//                           "redis" (default): stock @medusajs/medusa/locking-redis
//   LOCKING_BRIDGE_URL      the bridge's ws:// endpoint (bridge only)
//   LOCKING_BRIDGE_TOKEN    its token (bridge only)
//   LOCKING_BRIDGE_LAZY     "true": the provider option lazyConnect (skip the start-up check)
//   LOCKING_BRIDGE_RESOLVE  the provider's resolve (bridge only); default the package's directory
//                           in this checkout, ../medusa-locking-bridge ("@locktui/medusa-locking-bridge"
//                           for an installed package, e.g. in the output of `medusa build`)
//
// Admin is off; the app runs with NODE_ENV=production, from source (no `medusa build`), except in
// e2e/medusa_build_test.go, which builds a copy of it and sets LOCKING_BRIDGE_RESOLVE to the
// package installed from a registry.
const path = require("node:path")
const { defineConfig } = require("@medusajs/framework/utils")

const redisUrl = process.env.REDIS_URL
const locking = process.env.MEDUSA_LOCKING || "redis"
if (locking !== "bridge" && locking !== "redis") {
  throw new Error(`medusa-config: MEDUSA_LOCKING must be "bridge" or "redis", got ${JSON.stringify(locking)}`)
}

const lockingProvider =
  locking === "bridge"
    ? {
        resolve: process.env.LOCKING_BRIDGE_RESOLVE || path.join(__dirname, "..", "medusa-locking-bridge"),
        id: "locking-bridge",
        is_default: true,
        options: {
          url: process.env.LOCKING_BRIDGE_URL,
          token: process.env.LOCKING_BRIDGE_TOKEN,
          ...(process.env.LOCKING_BRIDGE_LAZY === "true" ? { lazyConnect: true } : {}),
        },
      }
    : {
        resolve: "@medusajs/medusa/locking-redis",
        id: "locking-redis",
        is_default: true,
        options: { redisUrl },
      }

module.exports = defineConfig({
  projectConfig: {
    databaseUrl: process.env.DATABASE_URL,
    redisUrl,
    workerMode: "shared",
    http: {
      storeCors: "http://127.0.0.1",
      adminCors: "http://127.0.0.1",
      authCors: "http://127.0.0.1",
      jwtSecret: "e2e-jwt-secret",
      cookieSecret: "e2e-cookie-secret",
    },
  },
  admin: { disable: true },
  modules: [
    { resolve: "@medusajs/medusa/event-bus-redis", options: { redisUrl } },
    { resolve: "@medusajs/medusa/workflow-engine-redis", options: { redis: { redisUrl } } },
    { resolve: "@medusajs/medusa/cache-redis", options: { redisUrl } },
    { resolve: "@medusajs/medusa/locking", options: { providers: [lockingProvider] } },
  ],
})
