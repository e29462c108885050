// Modules whose types @medusajs/types' config declarations use and every Medusa app installs,
// but compat/ does not: stubbed here (only the names Medusa's declarations use, as `any`) so
// that the usage check reads Medusa's types without skipLibCheck, which would skip index.d.ts too.
declare module "jsonwebtoken" {
  export type Secret = any
  export type SignOptions = any
  export type VerifyOptions = any
}
declare module "vite" {
  export type InlineConfig = any
}
