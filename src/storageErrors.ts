/**
 * Which failures mean a backing service (Redis, the event store) is unreachable rather than a bug. Shared by
 * the HTTP error middleware (answered 503, never 500) and the projector runner (it retries the batch), so it
 * lives below both instead of in the HTTP layer.
 */

/** Errors that mean a backing service is unreachable (answered 503, never 500). */
export function isStorageUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: string }).code;
  return (
    err.name === 'MaxRetriesPerRequestError' ||
    code === 'ECONNREFUSED' ||
    code === 'ECONNRESET' ||
    code === 'SQLITE_BUSY' ||
    // PostgreSQL: the append lock or a statement timed out, the session was ended, the server is unreachable or full.
    (typeof code === 'string' && /^(55P03|57014|25P03|57P0[1-3]|08\d{3}|53300)$/.test(code)) ||
    /^Connection terminated|Client was closed and is not queryable|Client has encountered a connection error and is not queryable/.test(err.message) ||
    /Connection is closed|Stream isn't writeable|enableOfflineQueue|LOADING Redis is loading/.test(err.message) ||
    // A Redis Cluster that lost a master (no replica took over yet, or none exists), or is moving slots (a plain
    // connection to one master, as the projector's, is answered MOVED or ASK for a slot that moved or is moving:
    // not the event's fault, so never a quarantine).
    /^(CLUSTERDOWN|TRYAGAIN|MASTERDOWN|MOVED |ASK )|Too many Cluster redirections|Failed to refresh slots cache|None of startup nodes is available|Cluster isn't ready/.test(err.message)
  );
}
