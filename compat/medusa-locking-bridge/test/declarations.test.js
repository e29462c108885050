"use strict"

// index.d.ts declares exactly the values the package exports at run time: every runtime export
// is declared, and every declared value exists. (`make node-types` checks how the declarations
// type-check against a usage file; this checks them against the real module.)

const path = require("node:path")
const { describe, test } = require("node:test")
const assert = require("node:assert/strict")
const { requireCompat, packageDir } = require("../test-support/env")

const ts = requireCompat("typescript")
const pkg = require("..")

/** The names of the values (not types) that index.d.ts exports, sorted. */
function declaredValueExports() {
  const file = path.join(packageDir, "index.d.ts")
  const program = ts.createProgram([file], { strict: true, noEmit: true, types: [] })
  const checker = program.getTypeChecker()
  const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(file))
  return checker
    .getExportsOfModule(moduleSymbol)
    .filter((s) => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s).flags & ts.SymbolFlags.Value)
    .map((s) => s.name)
    .sort()
}

describe("index.d.ts and the runtime exports", () => {
  test("declare the same values", () => {
    assert.deepEqual(declaredValueExports(), Object.keys(pkg).sort())
  })
})
