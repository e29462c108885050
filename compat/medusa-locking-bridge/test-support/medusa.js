"use strict"

// Medusa's module loader as the tests drive it, for this package's tests and the e2e scratch app
// (which passes the framework it installed, so that nothing here resolves a package itself).

/**
 * MedusaModule.bootstrap of the Locking module with the given providers (the module has no
 * models, so no database is needed); resolves the module's service.
 *
 * @param {{MedusaModule: any, Modules: any}} framework @medusajs/framework's modules-sdk and utils exports
 * @param {{providers: object[], moduleOptions?: object, logger: object, cwd: string}} args
 *   providers as medusa-config lists them; moduleOptions the Locking module's own options; cwd
 *   the app directory Medusa resolves the module from
 */
async function bootstrapLocking({ MedusaModule, Modules }, { providers, moduleOptions = {}, logger, cwd }) {
  const modules = await MedusaModule.bootstrap({
    moduleKey: Modules.LOCKING,
    defaultPath: "@medusajs/locking",
    declaration: { scope: "internal", resources: "shared", options: { ...moduleOptions, providers } },
    injectedDependencies: { logger },
    cwd,
  })
  return modules[Modules.LOCKING]
}

module.exports = { bootstrapLocking }
