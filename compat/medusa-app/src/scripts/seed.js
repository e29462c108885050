// Seeds what a store cart completion needs, with Medusa's own workflows (a lean version of the
// Medusa starter's src/scripts/seed.ts): a store currency, a sales channel, a region with the
// system payment provider, a tax region, a stock location with the manual fulfillment provider,
// a shipping profile, a fulfillment set with a service zone and a flat-rate shipping option, a
// publishable API key linked to the sales channel, and a published product whose variant has a
// price in the region's currency and no managed inventory.
//
// Run with `medusa exec ./src/scripts/seed.js`. It writes what a storefront needs (the
// publishable key's token, the region, the variant, the shipping option) as JSON to the file
// named by $SEED_OUTPUT, or to stdout when that is unset.
const fs = require("node:fs")
const { ContainerRegistrationKeys, Modules, ProductStatus } = require("@medusajs/framework/utils")
const {
  createApiKeysWorkflow,
  createProductsWorkflow,
  createRegionsWorkflow,
  createSalesChannelsWorkflow,
  createShippingOptionsWorkflow,
  createShippingProfilesWorkflow,
  createStockLocationsWorkflow,
  createTaxRegionsWorkflow,
  linkSalesChannelsToApiKeyWorkflow,
  linkSalesChannelsToStockLocationWorkflow,
  updateStoresWorkflow,
} = require("@medusajs/medusa/core-flows")

const CURRENCY = "eur"
const COUNTRY = "dk"
const PRICE = 10 // in the currency's main unit, as Medusa 2 stores amounts

// medusa exec runs the module's default export.
exports.default = async function seed({ container }) {
  const logger = container.resolve(ContainerRegistrationKeys.LOGGER)
  const link = container.resolve(ContainerRegistrationKeys.LINK)
  const fulfillment = container.resolve(Modules.FULFILLMENT)
  const storeModule = container.resolve(Modules.STORE)

  const [store] = await storeModule.listStores()
  const {
    result: [salesChannel],
  } = await createSalesChannelsWorkflow(container).run({
    input: { salesChannelsData: [{ name: "e2e sales channel" }] },
  })
  await updateStoresWorkflow(container).run({
    input: {
      selector: { id: store.id },
      update: {
        supported_currencies: [{ currency_code: CURRENCY, is_default: true }],
        default_sales_channel_id: salesChannel.id,
      },
    },
  })

  const {
    result: [region],
  } = await createRegionsWorkflow(container).run({
    input: {
      regions: [{ name: "e2e region", currency_code: CURRENCY, countries: [COUNTRY], payment_providers: ["pp_system_default"] }],
    },
  })
  await createTaxRegionsWorkflow(container).run({ input: [{ country_code: COUNTRY, provider_id: "tp_system" }] })

  const {
    result: [location],
  } = await createStockLocationsWorkflow(container).run({
    input: { locations: [{ name: "e2e warehouse", address: { city: "Copenhagen", country_code: COUNTRY.toUpperCase(), address_1: "" } }] },
  })
  await link.create({
    [Modules.STOCK_LOCATION]: { stock_location_id: location.id },
    [Modules.FULFILLMENT]: { fulfillment_provider_id: "manual_manual" },
  })
  await linkSalesChannelsToStockLocationWorkflow(container).run({ input: { id: location.id, add: [salesChannel.id] } })

  let [profile] = await fulfillment.listShippingProfiles({ type: "default" })
  if (!profile) {
    ;({
      result: [profile],
    } = await createShippingProfilesWorkflow(container).run({
      input: { data: [{ name: "Default Shipping Profile", type: "default" }] },
    }))
  }
  const fulfillmentSet = await fulfillment.createFulfillmentSets({
    name: "e2e delivery",
    type: "shipping",
    service_zones: [{ name: "e2e zone", geo_zones: [{ country_code: COUNTRY, type: "country" }] }],
  })
  await link.create({
    [Modules.STOCK_LOCATION]: { stock_location_id: location.id },
    [Modules.FULFILLMENT]: { fulfillment_set_id: fulfillmentSet.id },
  })
  const {
    result: [shippingOption],
  } = await createShippingOptionsWorkflow(container).run({
    input: [
      {
        name: "Standard Shipping",
        price_type: "flat",
        provider_id: "manual_manual",
        service_zone_id: fulfillmentSet.service_zones[0].id,
        shipping_profile_id: profile.id,
        type: { label: "Standard", description: "Ship in 2-3 days.", code: "standard" },
        prices: [
          { currency_code: CURRENCY, amount: PRICE },
          { region_id: region.id, amount: PRICE },
        ],
        rules: [
          { attribute: "enabled_in_store", value: "true", operator: "eq" },
          { attribute: "is_return", value: "false", operator: "eq" },
        ],
      },
    ],
  })

  const {
    result: [apiKey],
  } = await createApiKeysWorkflow(container).run({
    input: { api_keys: [{ title: "e2e storefront", type: "publishable", created_by: "" }] },
  })
  await linkSalesChannelsToApiKeyWorkflow(container).run({ input: { id: apiKey.id, add: [salesChannel.id] } })

  const {
    result: [product],
  } = await createProductsWorkflow(container).run({
    input: {
      products: [
        {
          title: "e2e T-shirt",
          handle: "e2e-t-shirt",
          status: ProductStatus.PUBLISHED,
          shipping_profile_id: profile.id,
          options: [{ title: "Size", values: ["M"] }],
          variants: [
            {
              title: "M",
              sku: "E2E-SHIRT-M",
              options: { Size: "M" },
              manage_inventory: false,
              prices: [{ currency_code: CURRENCY, amount: PRICE }],
            },
          ],
          sales_channels: [{ id: salesChannel.id }],
        },
      ],
    },
  })

  const out = JSON.stringify({
    publishableKey: apiKey.token,
    salesChannelId: salesChannel.id,
    regionId: region.id,
    countryCode: COUNTRY,
    currencyCode: CURRENCY,
    shippingOptionId: shippingOption.id,
    productId: product.id,
    variantId: product.variants[0].id,
  })
  if (process.env.SEED_OUTPUT) {
    fs.writeFileSync(process.env.SEED_OUTPUT, out + "\n")
  } else {
    process.stdout.write(out + "\n")
  }
  logger.info("e2e seed done")
}
