"use strict"

// The start every lock client script here shares (worker.js, chaos-holder.js): its JSON config
// from the first argument, checked, a require rooted in compat/, and one way to fail.

const path = require("node:path")
const { createRequire } = require("node:module")

/**
 * Reads and checks the script's config: a JSON object in process.argv[2] with every field of
 * required and a "backend" of "stock" or "bridge". A bad config ends the process (fatal).
 * Unhandled rejections are written to stderr.
 *
 * @param {string} name how the script names itself on stderr
 * @param {string[]} required the fields the config must have besides "compatDir" and "backend"
 * @returns {{config: object, compatRequire: NodeRequire, fatal: (message: string) => never}}
 *   compatRequire resolves from compat/, where `make node-deps` installs the packages; fatal
 *   writes "<name>: <message>" to stderr and exits 2
 */
function startScript(name, required) {
  function fatal(message) {
    process.stderr.write(`${name}: ${message}\n`)
    process.exit(2)
  }
  let config
  try {
    config = JSON.parse(process.argv[2] ?? "")
  } catch (err) {
    fatal(`the first argument must be a JSON config (${err.message})`)
  }
  for (const field of ["compatDir", "backend", ...required]) {
    if (config?.[field] === undefined) fatal(`the config needs "${field}"`)
  }
  if (!["stock", "bridge"].includes(config.backend)) fatal(`"backend" must be "stock" or "bridge"`)
  process.on("unhandledRejection", (reason) => {
    process.stderr.write(`${name}: unhandled rejection: ${reason?.stack ?? reason}\n`)
  })
  return { config, compatRequire: createRequire(path.join(config.compatDir, "package.json")), fatal }
}

module.exports = { startScript }
