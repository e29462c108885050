#!/usr/bin/env node
// The Medusa side of TestPackedTarballInstallsAsMedusaProvider: run with the working directory
// set to a scratch app into which `npm install <tarball>` put @locktui/medusa-locking-bridge.
// Every package is resolved from that directory, as Medusa's module loader resolves a provider's
// "resolve" (require.resolve with paths [process.cwd()]), never from this checkout.
//
// Usage: node e2e/node/scratch-app.js '<config JSON>'
//
//   config = {"phase": "plain"}
//     the app without @medusajs/framework: require() and import() the package's entry
//   config = {"phase": "medusa", "bridgeUrl": "ws://…/ws", "token": "…", "key": "…", "owner": "…"}
//     the app with @medusajs/framework and @medusajs/locking: MedusaModule.bootstrap of the
//     Locking module with the package as its default provider, then calls through the module;
//     the lock on key stays held by owner for the test to find in Redis
//
// Prints one JSON report on stdout; diagnostics go to stderr. Exits 2 on a bad config, 1 when a
// step fails (the message on stderr).
"use strict"

const fs = require("node:fs")
const path = require("node:path")
const { pathToFileURL } = require("node:url")
// Test support only: it gets the app's framework passed in and resolves no package itself.
const { bootstrapLocking } = require("../../compat/medusa-locking-bridge/test-support/medusa")

const PACKAGE = "@locktui/medusa-locking-bridge"
const PROVIDER_ID = "locking-bridge"

/** Requires name as the app would: resolved from the app's directory. */
function fromApp(name) {
  return require(require.resolve(name, { paths: [process.cwd()] }))
}

/** What the package exports, in the terms Medusa's loader looks at. */
function describeExports(pkg) {
  return {
    module: pkg.module,
    identifiers: (pkg.services ?? []).map((s) => s.identifier),
    serviceIsProviderClass: pkg.services?.[0] === pkg.BridgeLockingProvider,
    loaderCount: pkg.loaders?.length ?? 0,
    loaderIsLoader: pkg.loaders?.[0] === pkg.loader && typeof pkg.loader === "function",
    defaultHasServices: pkg.default?.services?.[0] === pkg.BridgeLockingProvider,
    createIsFunction: typeof pkg.createBridgeLockingProvider === "function",
    usesMedusaErrors: pkg.usesMedusaErrors,
  }
}

async function plain() {
  const entry = require.resolve(PACKAGE, { paths: [process.cwd()] })
  const pkgDir = path.dirname(require.resolve(`${PACKAGE}/package.json`, { paths: [process.cwd()] }))
  const manifest = JSON.parse(fs.readFileSync(path.join(pkgDir, "package.json"), "utf8"))
  const pkg = require(entry)
  // An ES module app imports the CommonJS package: Node finds the named exports itself.
  const esm = await import(pathToFileURL(entry).href)
  return {
    entry: fs.realpathSync(entry),
    typesFileExists: typeof manifest.types === "string" && fs.existsSync(path.join(pkgDir, manifest.types)),
    exports: describeExports(pkg),
    esmNamedCreate: typeof esm.createBridgeLockingProvider === "function",
    esmDefaultIsExports: esm.default === pkg,
  }
}

async function medusa(config) {
  const { MedusaModule } = fromApp("@medusajs/framework/modules-sdk")
  const { Modules, MedusaError } = fromApp("@medusajs/framework/utils")
  const pkg = fromApp(PACKAGE)
  const logs = []
  const logger = Object.fromEntries(
    ["info", "warn", "error", "debug", "log"].map((level) => [level, (m) => logs.push(`${level}: ${m}`)])
  )
  const locking = await bootstrapLocking({ MedusaModule, Modules }, {
    providers: [{ resolve: PACKAGE, id: PROVIDER_ID, is_default: true, options: { url: config.bridgeUrl, token: config.token } }],
    logger,
    cwd: process.cwd(),
  })
  const provider = locking?.providerService_?.retrieveProviderRegistration(PROVIDER_ID)
  try {
    await locking.acquire(config.key, { ownerId: config.owner, expire: 60 })
    const conflict = await locking.acquire(config.key, { ownerId: `${config.owner}-other` }).then(
      () => null,
      (err) => ({ isMedusaError: err instanceof MedusaError, type: err.type, message: err.message })
    )
    const executed = await locking.execute(`${config.key}:execute`, async (signal) =>
      signal instanceof AbortSignal && !signal.aborted ? "ran with a live signal" : "no live signal"
    )
    return {
      exports: describeExports(pkg),
      providerIsPackageClass: provider instanceof pkg.BridgeLockingProvider,
      defaultProviderId: locking.defaultProviderId,
      conflict,
      executed,
      logs,
    }
  } finally {
    // Medusa 2.21.2 has no provider shutdown hook: close the client the loader made.
    await provider?.close()
    MedusaModule.clearInstances()
  }
}

async function main() {
  let config
  try {
    config = JSON.parse(process.argv[2] ?? "")
  } catch (err) {
    process.stderr.write(`scratch-app: the first argument must be a JSON config (${err.message})\n`)
    process.exit(2)
  }
  const phases = { plain, medusa }
  if (!phases[config?.phase]) {
    process.stderr.write(`scratch-app: "phase" must be "plain" or "medusa"\n`)
    process.exit(2)
  }
  process.stdout.write(JSON.stringify(await phases[config.phase](config)) + "\n")
}

main().catch((err) => {
  process.stderr.write(`scratch-app: ${err?.stack ?? err}\n`)
  process.exit(1)
})
