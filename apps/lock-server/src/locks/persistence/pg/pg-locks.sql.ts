/**
 * Every statement the pg backend runs. Each conditional write is ONE
 * statement, decided with the database clock (`clock_timestamp()`), so the
 * web tier's clock never takes part in an expiry decision (docs/lock-server.md).
 *
 * "Live" grant: `session_id IS NOT NULL`, lease unexpired, and the session row
 * exists and is unexpired. The session row is read `FOR SHARE`, so a
 * concurrent heartbeat and a takeover serialise: either the heartbeat lands
 * first and the holder stays live, or the takeover lands first and the
 * heartbeat finds the session already expired.
 *
 * The bench (bench/lock-server) runs ACQUIRE_SQL and RELEASE_SQL raw, as the
 * backend's own ceiling.
 */

/** Holder-session liveness of the lock row `l`, locking the session row (FOR SHARE). */
const HOLDER_SESSION_ALIVE = `COALESCE((
      SELECT hs.expires_at > clock_timestamp() FROM lock_session hs
      WHERE hs.session_id = l.session_id FOR SHARE), false)`;

/** True when row `l` is a live grant of the same session and owner as EXCLUDED. */
const SAME_LIVE_HOLDER = `(l.session_id = EXCLUDED.session_id
      AND l.owner_id = EXCLUDED.owner_id
      AND l.expires_at > clock_timestamp())`;

/**
 * L4, one attempt. $1 key, $2 sessionId, $3 ownerId, $4 ttlMs.
 * - key free (released, lease expired, or holder session dead): a NEW token is
 *   minted by nextval inside DO UPDATE, i.e. after the row lock is held, so
 *   grant order equals token order.
 * - same session + same owner still live: the row is rewritten with its own
 *   values and the same grant comes back (docs/lock-server.md: no token minted).
 * - otherwise no row is written; the second branch reports why (session
 *   unknown/expired, or the holder as this statement's snapshot saw it).
 * The nextval in the INSERT branch only matters for a never-seen key; on
 * conflict it is discarded (tokens are not dense, docs/lock-server.md).
 */
export const ACQUIRE_SQL = `
WITH sess AS (
  SELECT s.session_id, s.expires_at > clock_timestamp() AS alive, s.closed_at IS NOT NULL AS closed
  FROM lock_session s WHERE s.session_id = $2::uuid
),
granted AS (
  INSERT INTO lock_entry AS l
    (lock_key, session_id, owner_id, fencing_token, ttl_ms, acquired_at, expires_at)
  SELECT $1, s.session_id, $3, nextval('fencing_token_seq'), $4::int,
         clock_timestamp(), clock_timestamp() + $4::int * interval '1 millisecond'
  FROM sess s WHERE s.alive
  ON CONFLICT (lock_key) DO UPDATE SET
    session_id = EXCLUDED.session_id,
    owner_id = EXCLUDED.owner_id,
    ttl_ms = CASE WHEN ${SAME_LIVE_HOLDER} THEN l.ttl_ms ELSE EXCLUDED.ttl_ms END,
    fencing_token = CASE WHEN ${SAME_LIVE_HOLDER} THEN l.fencing_token
                         ELSE nextval('fencing_token_seq') END,
    acquired_at = CASE WHEN ${SAME_LIVE_HOLDER} THEN l.acquired_at ELSE clock_timestamp() END,
    expires_at = CASE WHEN ${SAME_LIVE_HOLDER} THEN l.expires_at
                      ELSE clock_timestamp() + EXCLUDED.ttl_ms * interval '1 millisecond' END
  WHERE l.session_id IS NULL
     OR l.expires_at <= clock_timestamp()
     OR ${SAME_LIVE_HOLDER}
     OR NOT ${HOLDER_SESSION_ALIVE}
  RETURNING l.lock_key, l.owner_id, l.session_id, l.fencing_token, l.acquired_at, l.expires_at
)
SELECT 'granted' AS outcome, g.owner_id, g.session_id::text AS session_id,
       g.fencing_token::text AS fencing_token, g.acquired_at, g.expires_at,
       clock_timestamp() AS db_now
FROM granted g
UNION ALL
SELECT CASE WHEN s.session_id IS NULL THEN 'session_unknown'
            WHEN s.closed THEN 'session_closed'
            WHEN NOT s.alive THEN 'session_expired'
            ELSE 'contended' END,
       c.owner_id, c.session_id::text, c.fencing_token::text, c.acquired_at, c.expires_at,
       clock_timestamp()
FROM (SELECT 1) AS one
LEFT JOIN sess s ON true
LEFT JOIN lock_entry c ON c.lock_key = $1
WHERE NOT EXISTS (SELECT 1 FROM granted)`;

/**
 * L5: extend the lease of the grant (key, token) held by this live session;
 * the token is never touched; the lease restarts with its granted TTL. $1 key, $2 token, $3 sessionId.
 */
export const RENEW_SQL = `
UPDATE lock_entry l SET
  expires_at = clock_timestamp() + l.ttl_ms * interval '1 millisecond'
WHERE l.lock_key = $1
  AND l.fencing_token = $2::bigint
  AND l.session_id = $3::uuid
  AND l.expires_at > clock_timestamp()
  AND ${HOLDER_SESSION_ALIVE}
RETURNING l.owner_id, l.session_id::text AS session_id, l.fencing_token::text AS fencing_token,
          l.acquired_at, l.expires_at`;

/**
 * L6: compare-and-delete on (key, token) and nothing else (docs/payment-resource.md). The row
 * is kept (session_id NULL = released) so L7 still knows the key was seen.
 * A grant that already expired or whose session died matches nothing:
 * LOCK_LOST. $1 key, $2 token.
 */
export const RELEASE_SQL = `
UPDATE lock_entry l SET session_id = NULL, expires_at = clock_timestamp()
WHERE l.lock_key = $1
  AND l.fencing_token = $2::bigint
  AND l.session_id IS NOT NULL
  AND l.expires_at > clock_timestamp()
  AND ${HOLDER_SESSION_ALIVE}
RETURNING l.lock_key`;

/** Diagnostic read after a renew/release matched nothing. $1 key, $2 sessionId|null. */
export const GRANT_DIAGNOSIS_SQL = `
SELECT (SELECT l.fencing_token::text FROM lock_entry l WHERE l.lock_key = $1) AS stored_token,
       (SELECT s.expires_at > clock_timestamp() FROM lock_session s
        WHERE s.session_id = $2::uuid) AS session_alive,
       (SELECT s.closed_at IS NOT NULL FROM lock_session s
        WHERE s.session_id = $2::uuid) AS session_closed`;

/** L7 (advisory). $1 key. */
export const INSPECT_SQL = `
SELECT l.owner_id, l.session_id::text AS session_id, l.fencing_token::text AS fencing_token,
       l.acquired_at, l.expires_at,
       (l.session_id IS NOT NULL
        AND l.expires_at > clock_timestamp()
        AND EXISTS (SELECT 1 FROM lock_session s
                    WHERE s.session_id = l.session_id AND s.expires_at > clock_timestamp())) AS held
FROM lock_entry l WHERE l.lock_key = $1`;

/**
 * L8: free a live grant (optionally only if its token is $2), advance the
 * token floor and write the audit row, all in one statement. The floor is a
 * nextval taken while the row lock is held: it exceeds the revoked token, and
 * every later grant of the key mints a nextval above it. The sequence is
 * never set back (no setval), so no token can be re-issued.
 * $1 key, $2 expectedToken|null, $3 operator, $4 reason.
 */
export const REVOKE_SQL = `
WITH target AS (
  SELECT l.lock_key, l.fencing_token, l.owner_id, l.session_id
  FROM lock_entry l
  WHERE l.lock_key = $1
    AND ($2::bigint IS NULL OR l.fencing_token = $2::bigint)
    AND l.session_id IS NOT NULL
    AND l.expires_at > clock_timestamp()
    AND EXISTS (SELECT 1 FROM lock_session s
                WHERE s.session_id = l.session_id AND s.expires_at > clock_timestamp())
  FOR UPDATE
),
freed AS (
  UPDATE lock_entry l SET session_id = NULL, expires_at = clock_timestamp()
  FROM target t WHERE l.lock_key = t.lock_key
  RETURNING t.lock_key, t.fencing_token, t.owner_id, t.session_id
)
INSERT INTO lock_revocation
  (revocation_id, lock_key, revoked_token, new_token_floor, operator, reason,
   holder_owner_id, holder_session_id)
SELECT gen_random_uuid(), f.lock_key, f.fencing_token, nextval('fencing_token_seq'), $3, $4,
       f.owner_id, f.session_id
FROM freed f
RETURNING revocation_id::text AS revocation_id, revoked_token::text AS revoked_token,
          new_token_floor::text AS new_token_floor, holder_owner_id,
          holder_session_id::text AS holder_session_id`;

/** L1. $1 ownerId, $2 ttlMs. */
export const OPEN_SESSION_SQL = `
INSERT INTO lock_session (session_id, owner_id, ttl_ms, expires_at)
VALUES (gen_random_uuid(), $1, $2::int, clock_timestamp() + $2::int * interval '1 millisecond')
RETURNING session_id::text AS session_id, owner_id, ttl_ms, expires_at`;

/**
 * An owner's live sessions and the live locks they hold (the per-owner caps).
 * Live sessions are found by expires_at, so the read stays as small as the
 * live sessions. $1 ownerId.
 */
export const OWNER_LOAD_SQL = `
SELECT count(*)::int AS sessions,
       COALESCE(sum((SELECT count(*) FROM lock_entry l
                     WHERE l.session_id = s.session_id
                       AND l.expires_at > clock_timestamp())), 0)::int AS locks
FROM lock_session s
WHERE s.owner_id = $1 AND s.expires_at > clock_timestamp()`;

/**
 * L2: extend a session that is still alive by its own TTL, and count its live
 * grants. An expired session is never revived here. $1 sessionId.
 */
export const HEARTBEAT_SQL = `
WITH hb AS (
  UPDATE lock_session SET expires_at = clock_timestamp() + ttl_ms * interval '1 millisecond'
  WHERE session_id = $1::uuid AND expires_at > clock_timestamp()
  RETURNING session_id, expires_at
)
SELECT hb.session_id::text AS session_id, hb.expires_at, clock_timestamp() AS server_time,
       (SELECT count(*)::int FROM lock_entry l
        WHERE l.session_id = hb.session_id AND l.expires_at > clock_timestamp()) AS held_lock_count
FROM hb`;

/** Who a session belongs to (any state, CLOSED included; gone once reaped). $1 sessionId. */
export const SESSION_OWNER_SQL = `
SELECT owner_id FROM lock_session WHERE session_id = $1::uuid`;

/** Diagnostic read after a heartbeat matched nothing. $1 sessionId. */
export const SESSION_STATE_SQL = `
SELECT expires_at > clock_timestamp() AS alive, closed_at IS NOT NULL AS closed
FROM lock_session WHERE session_id = $1::uuid`;

/**
 * L3 in one statement (docs/lock-server.md, "Session states"). A live session becomes CLOSED:
 * `closed_at` set and its lease ended at that same instant (so no liveness test passes
 * again, and the reaper forgets it after the retention); its locks are freed. An expired one
 * stays EXPIRED, its lock rows tidied. A closed one is left alone and reported as such.
 * The row lock (FOR UPDATE) makes a second, concurrent L3 see the first one's CLOSED.
 * $1 sessionId.
 */
export const CLOSE_SESSION_SQL = `
WITH t AS (SELECT clock_timestamp() AS now),
target AS (
  SELECT s.session_id, s.closed_at IS NOT NULL AS was_closed, s.expires_at > t.now AS alive
  FROM lock_session s CROSS JOIN t WHERE s.session_id = $1::uuid
  FOR UPDATE OF s
),
closed AS (
  UPDATE lock_session s SET closed_at = t.now, expires_at = LEAST(s.expires_at, t.now)
  FROM target g CROSS JOIN t
  WHERE s.session_id = g.session_id AND g.alive AND NOT g.was_closed
  RETURNING s.session_id
),
freed AS (
  UPDATE lock_entry l SET session_id = NULL, expires_at = t.now
  FROM target g CROSS JOIN t
  WHERE l.session_id = g.session_id AND NOT g.was_closed
  RETURNING l.lock_key
)
SELECT (SELECT count(*)::int FROM target) AS found,
       COALESCE((SELECT bool_or(was_closed) FROM target), false) AS was_closed,
       COALESCE((SELECT array_agg(lock_key) FROM freed), '{}') AS freed_keys`;

/**
 * Grace after an outage (docs/lock-server.md): every session that was alive when the
 * outage began ($1 = outage length in ms, plus margin) gets one full TTL from
 * now, and so do the live-at-outage leases of those sessions, so a database
 * failover does not mass-evict everyone at once.
 */
export const GRACE_SQL = `
WITH revived AS (
  UPDATE lock_session
  SET expires_at = GREATEST(expires_at, clock_timestamp() + ttl_ms * interval '1 millisecond')
  WHERE expires_at > clock_timestamp() - $1::int * interval '1 millisecond'
    AND closed_at IS NULL
  RETURNING session_id
),
leases AS (
  UPDATE lock_entry l
  SET expires_at = GREATEST(l.expires_at, clock_timestamp() + l.ttl_ms * interval '1 millisecond')
  FROM revived r
  WHERE l.session_id = r.session_id
    AND l.expires_at > clock_timestamp() - $1::int * interval '1 millisecond'
  RETURNING l.lock_key
)
SELECT (SELECT count(*)::int FROM revived) AS sessions, (SELECT count(*)::int FROM leases) AS leases`;

/**
 * Drops sessions ended (expired or closed) longer ago than the retention ($1 ms); later
 * lookups say SESSION_UNKNOWN. A closed row's expires_at is its closing instant.
 */
export const REAP_SESSIONS_SQL = `
DELETE FROM lock_session WHERE expires_at < clock_timestamp() - $1::int * interval '1 millisecond'`;

/**
 * Console read: live grants (as L7's "held") by key in byte order, so both
 * backends list in the same order. $1 limit (the caller asks one extra row to
 * know whether there are more).
 */
export const LIST_HELD_SQL = `
WITH t AS (SELECT clock_timestamp() AS now)
SELECT l.lock_key, l.owner_id, l.session_id::text AS session_id,
       l.fencing_token::text AS fencing_token,
       floor(extract(epoch FROM l.expires_at - t.now) * 1000)::int AS lease_remaining_ms
FROM lock_entry l CROSS JOIN t
JOIN lock_session s ON s.session_id = l.session_id
WHERE l.expires_at > t.now AND s.expires_at > t.now
ORDER BY l.lock_key COLLATE "C"
LIMIT $1::int`;

/** Console read: live sessions by id, with their live grants counted (state: liveSessionState). $1 limit. */
export const LIST_SESSIONS_SQL = `
WITH t AS (SELECT clock_timestamp() AS now)
SELECT s.session_id::text AS session_id, s.owner_id, s.ttl_ms,
       floor(extract(epoch FROM s.expires_at - t.now) * 1000)::int AS ttl_remaining_ms,
       (SELECT count(*)::int FROM lock_entry l
        WHERE l.session_id = s.session_id AND l.expires_at > t.now) AS locks_held
FROM lock_session s CROSS JOIN t
WHERE s.expires_at > t.now
ORDER BY s.session_id
LIMIT $1::int`;

/**
 * Sessions by state (the lock_server_sessions gauge), by the rule of `liveSessionState`
 * (lock-api): SUSPECT once under half the TTL is left. Ended rows are only the retained ones.
 */
export const SESSIONS_BY_STATE_SQL = `
WITH t AS (SELECT clock_timestamp() AS now)
SELECT count(*) FILTER (WHERE s.expires_at > t.now
          AND (s.expires_at - t.now) * 2 >= s.ttl_ms * interval '1 millisecond')::int AS active,
       count(*) FILTER (WHERE s.expires_at > t.now
          AND (s.expires_at - t.now) * 2 < s.ttl_ms * interval '1 millisecond')::int AS suspect,
       count(*) FILTER (WHERE s.expires_at <= t.now AND s.closed_at IS NULL)::int AS expired,
       count(*) FILTER (WHERE s.closed_at IS NOT NULL)::int AS closed
FROM lock_session s CROSS JOIN t`;

/** Gauges: live sessions and live grants. */
export const ACTIVITY_SQL = `
SELECT (SELECT count(*)::int FROM lock_session WHERE expires_at > clock_timestamp()) AS sessions,
       (SELECT count(*)::int FROM lock_entry l JOIN lock_session s ON s.session_id = l.session_id
        WHERE l.expires_at > clock_timestamp() AND s.expires_at > clock_timestamp()) AS grants`;

/**
 * Availability probe: answers, is writable (not a standby, not read-only), and
 * the token sequence is not behind a token already handed out (TokenHighWater).
 */
export const PROBE_SQL = `
SELECT pg_is_in_recovery() AS in_recovery,
       current_setting('transaction_read_only') = 'on' AS read_only,
       (SELECT last_value FROM fencing_token_seq)::text AS token_source`;
