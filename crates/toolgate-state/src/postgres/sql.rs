//! The statements of the PostgreSQL backend, on one table:
//! `toolgate_state(key, value, expires_at)`.
//!
//! Time is the database's (`now()`), the same clock for every replica. A row whose
//! `expires_at` has passed is never read; each write removes up to [`PRUNED_PER_WRITE`]
//! expired rows other than its own (skipping rows another replica is pruning), in the same
//! statement, so the table holds about the live keys. `$3`, where there is one, is the TTL in
//! seconds.

use std::sync::LazyLock;

/// Expired rows each write removes, at most.
pub(super) const PRUNED_PER_WRITE: i64 = 16;

/// The advisory lock the schema is made under (made of "toolgate_state").
const SCHEMA_LOCK: i64 = 7_310_582_209_417_263_916;

/// Made in one transaction under an advisory lock, so that replicas starting together do not
/// race (concurrent `CREATE TABLE IF NOT EXISTS` can fail on the catalog's unique index).
pub(super) static SCHEMA: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT pg_advisory_xact_lock({SCHEMA_LOCK});
         CREATE TABLE IF NOT EXISTS toolgate_state (
             key TEXT PRIMARY KEY,
             value BYTEA NOT NULL,
             expires_at TIMESTAMPTZ NOT NULL
         );
         CREATE INDEX IF NOT EXISTS toolgate_state_by_expiry ON toolgate_state (expires_at);"
    )
});

/// The NOTIFY channel every replica listens on.
pub(super) const BUS_CHANNEL: &str = "toolgate_state";

/// Up to `$4` expired rows other than `$1`'s, removed as part of a write.
const PRUNE: &str = "WITH pruned AS (DELETE FROM toolgate_state WHERE key IN \
                     (SELECT key FROM toolgate_state WHERE expires_at <= now() AND key <> $1 \
                     LIMIT $4 FOR UPDATE SKIP LOCKED)) ";

pub(super) const GET: &str =
    "SELECT value FROM toolgate_state WHERE key = $1 AND expires_at > now()";

/// Written, replacing what was there.
pub(super) static PUT: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{PRUNE}INSERT INTO toolgate_state AS s (key, value, expires_at) \
         VALUES ($1, $2, now() + make_interval(secs => $3)) \
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at"
    )
});

/// Written only if the key is missing or expired: a row when it was.
pub(super) static PUT_NEW: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{PRUNE}INSERT INTO toolgate_state AS s (key, value, expires_at) \
         VALUES ($1, $2, now() + make_interval(secs => $3)) \
         ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_at = EXCLUDED.expires_at \
         WHERE s.expires_at <= now() RETURNING 1"
    )
});

/// The value, read and removed at once: one of two replicas taking it gets it.
pub(super) const TAKE: &str =
    "DELETE FROM toolgate_state WHERE key = $1 AND expires_at > now() RETURNING value";

/// Up to `$2` live rows whose key is `LIKE` `$1` (a [`like_escaped`] prefix and `%`). The key's
/// index serves `=` only (its collation is not `C`), so this reads the table, which holds about
/// the live keys.
pub(super) const SCAN: &str = "SELECT key, value FROM toolgate_state \
                               WHERE key LIKE $1 ESCAPE '\\' AND expires_at > now() LIMIT $2";

/// `text` matched literally by a `LIKE ... ESCAPE '\'` pattern: its `%`, `_` and `\` escaped.
pub(super) fn like_escaped(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// Removed, expired or not: whether it was live.
pub(super) const DELETE: &str =
    "DELETE FROM toolgate_state WHERE key = $1 RETURNING expires_at > now()";

/// `$2` added to the counter, made with the TTL if missing or expired (and then its TTL
/// replaced). A value that is not a decimal integer in its canonical form (as Redis reads a
/// counter) becomes a text that does not cast, so the statement fails with 22P02.
pub(super) static INCR: LazyLock<String> = LazyLock::new(|| {
    const CURRENT: &str = "convert_from(s.value, 'UTF8')";
    format!(
        "{PRUNE}INSERT INTO toolgate_state AS s (key, value, expires_at) \
         VALUES ($1, convert_to($2::bigint::text, 'UTF8'), now() + make_interval(secs => $3)) \
         ON CONFLICT (key) DO UPDATE SET \
         value = CASE WHEN s.expires_at <= now() THEN EXCLUDED.value ELSE convert_to((\
             (CASE WHEN {CURRENT} ~ '^(0|-?[1-9][0-9]{{0,18}})$' THEN {CURRENT} \
              ELSE 'not a counter' END)::bigint + $2::bigint)::text, 'UTF8') END, \
         expires_at = CASE WHEN s.expires_at <= now() THEN EXCLUDED.expires_at \
             ELSE s.expires_at END \
         RETURNING convert_from(s.value, 'UTF8')::bigint"
    )
});

pub(super) static PUBLISH: LazyLock<String> =
    LazyLock::new(|| format!("SELECT pg_notify('{BUS_CHANNEL}', $1)"));

/// What the bus runs on its connection.
pub(super) static LISTEN: LazyLock<String> = LazyLock::new(|| format!("LISTEN {BUS_CHANNEL}"));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_like_pattern_escapes_its_metacharacters() {
        assert_eq!(like_escaped("toolgate:approval:"), "toolgate:approval:");
        assert_eq!(like_escaped(r"a%b_c\d*e"), r"a\%b\_c\\d*e");
    }
}
