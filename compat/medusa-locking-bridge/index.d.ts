// Types of @locktui/medusa-locking-bridge. The provider methods match ILockingProvider of
// @medusajs/types 2.21.2, so the provider can stand in for @medusajs/locking-redis.

/** A logger such as Medusa's; every method is optional. */
export interface BridgeLogger {
  info?(message: string): void
  warn?(message: string): void
  error?(message: string): void
  debug?(message: string): void
}

/** Options of the provider: medusa-config `providers[].options`, or createBridgeLockingProvider's. */
export interface BridgeLockingOptions {
  /** The bridge's WebSocket endpoint: ws://, wss://, http:// or https://; the path defaults to /ws. */
  url: string
  /** Bearer token the bridge accepts (BRIDGE_TOKEN / --token). Omit only for an --insecure bridge. */
  token?: string
  /**
   * Seconds execute() waits for its keys when the call gives no timeout. Default: the Locking
   * module option of the same name (where stock reads it), else 5.
   */
  waitLockingTimeout?: number
  /**
   * true (the default, stock's timing): execute() resolves only once the bridge confirmed the
   * release of its keys, and a failed release rejects it. false: execute() resolves once the job
   * finished and the release is sent (one round trip fewer); this client's later requests on the
   * keys come after the release, other processes see the keys free about one round trip later.
   */
  awaitRelease?: boolean
  /**
   * Milliseconds a call made while disconnected waits for the connection: acquire without
   * awaitQueue, release and releaseAll. execute waits up to its own timeout and acquire with
   * awaitQueue as long as it takes. Default 3000.
   */
  connectTimeoutMs?: number
  /** Milliseconds allowed for the WebSocket handshake and the bridge's welcome. Default 10000. */
  handshakeTimeoutMs?: number
  /** First reconnect delay in milliseconds (doubled per failed attempt, jittered 50–100 %). Default 100. */
  reconnectMinDelayMs?: number
  /** Cap of the reconnect delay in milliseconds. Default 5000. */
  reconnectMaxDelayMs?: number
  /**
   * Milliseconds between client pings. Default: the bridge's `heartbeat.interval_ms` (a quarter
   * of its client timeout). A value above (timeout_ms - timeout_ms/4)/2 of the bridge is refused
   * when its welcome arrives (every call then fails with bridgeCode "heartbeat_interval"). The
   * connection's leases are lost at the send time of the latest answered request +
   * timeout_ms - timeout_ms/4, whatever this interval.
   */
  heartbeatIntervalMs?: number
  /**
   * Program or service name written, with this host and pid, in the holder record of every lock
   * this client takes (the console and `locktui get` show it). Default: the file name of the
   * script Node runs (process.argv[1]), else process.title.
   */
  program?: string
  /** Extra options for the `ws` WebSocket client (for example `ca` for a private TLS CA). */
  wsOptions?: Record<string, unknown>
  /** Logger for connection events and lost leases (createBridgeLockingProvider only; Medusa passes its own). */
  logger?: BridgeLogger
}

/** Arguments of execute, as ILockingProvider's. */
export interface ExecuteArgs {
  /** Seconds to wait for every key; max(timeout ?? waitLockingTimeout, 1), NaN counts as 1. */
  timeout?: number
  /** Seconds of the lease renewed while the job runs; max(expire ?? 60, 1), NaN counts as 60, rounded up. */
  expire?: number
}

/**
 * The fencing tokens of a hold (see docs/fencing.md): integers below 2^53 (exact as numbers) that
 * increase strictly per key across every holder. A bridge older than tokens sends none:
 * fencingToken is then undefined and fencingTokens empty.
 */
export interface Fencing {
  /** The token that stands for every key: the first key's in sorted order (the only one for one key). */
  fencingToken?: number
  /** Each key's token. */
  fencingTokens: Record<string, number>
}

/** Arguments of acquire, as ILockingProvider's (the Locking module passes awaitQueue through). */
export interface AcquireArgs {
  /** Owner of the locks; null or undefined means the anonymous owner "*". */
  ownerId?: string | null
  /** TTL in seconds when truthy (at least 1, rounded up); otherwise the lock does not expire. */
  expire?: number
  /** Wait until every key is free (no deadline, as stock) instead of failing at once. */
  awaitQueue?: boolean
  /**
   * An object that acquire fills with the fencing tokens of the keys it took, and resolves with
   * (without it acquire resolves undefined, as stock does). Through Medusa's Locking module,
   * which resolves undefined, read it from this object.
   */
  fencing?: Partial<Fencing>
  [key: string]: unknown
}

/** Arguments of release and releaseAll. */
export interface ReleaseArgs {
  /** Owner whose locks are released; null or undefined means "*". */
  ownerId?: string | null
  [key: string]: unknown
}

/**
 * Error thrown by the provider: a MedusaError when @medusajs/framework is installed, else an
 * Error with the same `type` and `message`. Lock conflicts have type "conflict", stock's
 * messages and no bridgeCode; other errors have a `bridgeCode`: the client's ("not_connected",
 * "connection_lost", "lease_too_late", "lost_at_grant", "closed", "unauthorized", "forbidden", "refused", "protocol",
 * "heartbeat_interval", "outcome_unknown") or the bridge's error code ("outcome_unknown",
 * "redis_error", "owner_forbidden", "key_forbidden", "too_many_leases", "too_many_renewals", …).
 * The `cause` of a "Lost the lock" signal reason has one of "heartbeat_timeout",
 * "lease_deadline", "connection_lost", "shutting_down", "closed".
 */
export interface BridgeLockingError extends Error {
  type: string
  bridgeCode?: string
}

/** A Medusa locking provider backed by a locktui bridge. */
export declare class BridgeLockingProvider {
  static identifier: "locking-bridge"
  /** Throws when options has no url, worded as stock words a missing redisUrl. */
  static validateOptions(options?: MedusaProviderOptions): void
  constructor(cradle: Record<string, unknown>, moduleOptions?: Record<string, unknown>, moduleDeclaration?: unknown)
  /** Seconds execute waits for its keys by default. */
  waitLockingTimeout: number
  /**
   * Runs job while holding every key. The job always gets a signal (also for an empty key list),
   * aborted with the "Lost the lock" conflict when the lease is lost, and the lease's fencing
   * tokens (empty for an empty key list).
   */
  execute<T>(keys: string | string[], job: (signal: AbortSignal, fencing: Fencing) => Promise<T>, args?: ExecuteArgs, sharedContext?: unknown): Promise<T>
  /**
   * Takes every key for ownerId (default "*"); without awaitQueue a held key rejects at once with
   * the conflict. With args.fencing it fills that object with the keys' fencing tokens and
   * resolves with it; without, it resolves undefined, as stock (ILockingProvider's signature).
   */
  acquire(keys: string | string[], args: AcquireArgs & { fencing: Partial<Fencing> }, sharedContext?: unknown): Promise<Fencing>
  acquire(keys: string | string[], args?: AcquireArgs, sharedContext?: unknown): Promise<void>
  /** Releases the keys ownerId (default "*") holds; true only when every key was released. */
  release(keys: string | string[], args?: ReleaseArgs, sharedContext?: unknown): Promise<boolean>
  /** Releases every key ownerId holds (default "*": only the anonymous owner's locks). */
  releaseAll(args?: ReleaseArgs, sharedContext?: unknown): Promise<void>
  /** Resolves once connected; rejects after timeoutMs (default connectTimeoutMs) or on a refused token. */
  ready(timeoutMs?: number): Promise<void>
  /** Closes the connection: pending calls reject, running jobs' signals abort, no more reconnects. */
  close(): Promise<void>
  /** Alias of close(). */
  shutdown(): Promise<void>
}

/**
 * The options Medusa hands a provider: medusa-config's `providers[].options` as written, checked
 * when they arrive (a missing url throws). BridgeLockingOptions describes them.
 */
export type MedusaProviderOptions = BridgeLockingOptions | Record<string, unknown>

/** The Medusa loader: builds the bridge client from the provider options and registers it. */
export declare function loader(args: {
  container: { register(registrations: Record<string, unknown>): unknown }
  logger?: BridgeLogger
  options?: MedusaProviderOptions
}): Promise<void>

/** A provider for any Node app. It connects in the background; call close() when done. */
export declare function createBridgeLockingProvider(options: BridgeLockingOptions): BridgeLockingProvider

/** Whether errors are MedusaError instances (@medusajs/framework is installed). */
export declare const usesMedusaErrors: boolean

/** The module provider Medusa resolves: ModuleProvider(Modules.LOCKING, {services, loaders}). */
declare const moduleProvider: {
  module: "locking"
  services: [typeof BridgeLockingProvider]
  loaders: [typeof loader]
}
export default moduleProvider
export declare const module: "locking"
export declare const services: [typeof BridgeLockingProvider]
export declare const loaders: [typeof loader]
