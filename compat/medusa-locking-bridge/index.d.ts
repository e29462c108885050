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
  /**
   * The bridge's WebSocket endpoint: ws://, wss://, http:// or https://; the path defaults to /ws.
   * Several bridges: an array of URLs, or one string of URLs separated by commas (for an
   * environment variable; a URL containing a comma must go in an array). The client connects to
   * the first that works, in the order given; when that connection ends it tries the next ones at
   * once, the dropped one last, and backs off (reconnect delays) only after every URL failed in a
   * row. All of them must be bridges of one lock domain (the same --namespace on the same Redis,
   * the same token restrictions): a bridge whose welcome differs from the first one is refused
   * (bridgeCode "namespace_mismatch" or "prefix_mismatch"). Every URL is checked when the client
   * is built (one-line error naming the option and the position, never the URL itself); a
   * fragment (#…) is refused. Messages show the URLs without userinfo and with query values as ***.
   */
  url: string | string[]
  /** Bearer token the bridge accepts (BRIDGE_TOKEN / --token). Omit only for an --insecure bridge. */
  token?: string
  /**
   * Seconds execute() waits for its keys when the call gives no timeout. Default: the Locking
   * module option of the same name (where stock reads it), else 5.
   */
  waitLockingTimeout?: number
  /**
   * false (the default): execute() resolves once the job finished and the release is sent (one
   * round trip to the bridge, not two); this client's later requests on the keys come after the
   * release, other processes see the keys free about one round trip later. true (stock's
   * timing): execute() resolves only once the bridge confirmed the release of its keys, and a
   * failed release rejects it.
   */
  awaitRelease?: boolean
  /**
   * Milliseconds a call made while disconnected waits for the connection: acquire without
   * awaitQueue, release and releaseAll. execute waits up to its own timeout and acquire with
   * awaitQueue as long as it takes. A release or releaseAll whose connection dropped before its
   * reply waits this long for a bridge to tell its outcome, an acquire this long plus the settle
   * window (then outcome_unknown). Default 3000.
   */
  connectTimeoutMs?: number
  /**
   * Milliseconds allowed for the WebSocket upgrade, and as many for the bridge's welcome. Default
   * 10000. The Medusa loader's start-up check waits up to twice that per URL (the upgrade, then
   * the welcome).
   */
  handshakeTimeoutMs?: number
  /** First reconnect delay in milliseconds (doubled per failed attempt, jittered 50–100 %). Default 100. */
  reconnectMinDelayMs?: number
  /** Cap of the reconnect delay in milliseconds. Default 5000. */
  reconnectMaxDelayMs?: number
  /**
   * Milliseconds between client pings. Default: the bridge's `heartbeat.interval_ms` (a quarter
   * of its client timeout). A value above (timeout_ms - margin_ms)/2 of the bridge's welcome is
   * refused when it arrives (every call then fails with bridgeCode "heartbeat_interval"). The
   * connection's leases are lost at the send time of the latest answered request +
   * timeout_ms - margin_ms, whatever this interval.
   */
  heartbeatIntervalMs?: number
  /**
   * Program or service name written, with this host and pid, in the holder record of every lock
   * this client takes (the console and `locktui get` show it). Default: the file name of the
   * script Node runs (process.argv[1]), else process.title.
   */
  program?: string
  /**
   * Extra options for the `ws` WebSocket client (for example `ca` for a private TLS CA). The
   * Medusa loader stops at start-up when the certificate of any URL fails verification.
   */
  wsOptions?: Record<string, unknown>
  /** Logger for connection events and lost leases (createBridgeLockingProvider only; Medusa passes its own). */
  logger?: BridgeLogger
  /**
   * Medusa loader only. false (the default): the loader waits for the first attempts to connect
   * and throws one line naming the option to fix when no bridge accepts the client, or when any
   * bridge refuses the token, serves another lock domain than the first, or presents a TLS
   * certificate that fails verification, so that `medusa start` fails at once. true: the loader neither
   * waits nor throws for the bridge (only for invalid options); it logs a warning that it started
   * without checking, and calls wait for the connection (a refused token then fails them).
   */
  lazyConnect?: boolean
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
 * The `type` of every error that is neither a lock conflict nor a mistake in the caller's
 * arguments: a server-side failure (no bridge answers, a refused token, a lost connection, an
 * unknown outcome, a closed client, a Redis error at the bridge, …). Medusa does not know this
 * type, so its HTTP error handler answers with its generic 500 ("An unknown error occurred.")
 * and shows the client nothing of the error; the server log gets its message and bridgeCode.
 */
export declare const LOCKING_BRIDGE_ERROR: "locking_bridge_error"

/**
 * Error thrown by the provider: a MedusaError when @medusajs/framework is installed, else an
 * Error with the same `type` and `message`. Its `type` is one of three:
 *
 * * "conflict": a lock conflict, exactly stock's (its message, no bridgeCode); Medusa answers 409;
 * * "invalid_data": a mistake in the caller's arguments: an empty ownerId, an infinite expire or
 *   one above the bridge's max_seconds (no bridgeCode), more keys than the bridge's max_keys (bridgeCode "too_many_keys"), a request
 *   larger than the bridge's max_frame_bytes ("frame_too_large", never sent); Medusa answers 400
 *   with the message;
 * * "locking_bridge_error" (LOCKING_BRIDGE_ERROR): everything else, with a `bridgeCode`: the
 *   client's ("not_connected", "connection_lost", "lease_too_late", "lost_at_grant", "closed",
 *   "unauthorized", "forbidden", "refused", "protocol", "heartbeat_interval",
 *   "namespace_mismatch", "prefix_mismatch", "outcome_unknown") or the bridge's error code
 *   ("outcome_unknown", "redis_error", "owner_forbidden", "key_forbidden", "too_many_leases",
 *   "too_many_renewals", "bad_request", "unknown_op", "duplicate_id", …); Medusa answers its
 *   generic 500.
 *
 * The `cause` of a "Lost the lock" signal reason is a "locking_bridge_error" with one of
 * "heartbeat_timeout", "lease_deadline", "connection_lost", "shutting_down", "closed".
 */
export interface BridgeLockingError extends Error {
  type: "conflict" | "invalid_data" | typeof LOCKING_BRIDGE_ERROR
  bridgeCode?: string
}

/** A Medusa locking provider backed by a locktui bridge. */
export declare class BridgeLockingProvider {
  static identifier: "locking-bridge"
  /**
   * Throws (one line) when options has no url, worded as stock words a missing redisUrl, when a
   * URL in it is malformed, or when lazyConnect is not a boolean.
   */
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
  /**
   * Resolves once connected; rejects after timeoutMs (default connectTimeoutMs), or at once when
   * every bridge URL failed and one refused the client for good (a refused token, another lock
   * domain, …).
   */
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

/**
 * The Medusa loader: builds the bridge client from the provider options and registers it.
 * Rejects with a one-line Error for invalid options and, unless `lazyConnect`, when no bridge
 * accepts the client or any bridge refuses the token ("locking-bridge: cannot start: …; check
 * the "token" option"), serves another lock domain, or presents a TLS certificate that fails
 * verification, after closing the client.
 */
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
