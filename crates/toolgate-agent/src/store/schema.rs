//! The sessions database's tables, and the migrations that bring an older file up to date.
//!
//! The version is SQLite's `user_version` (a number in the file's header, changed inside a
//! transaction like any table). [`MIGRATIONS`]`[n]` brings a file from version `n` to `n + 1`;
//! a later toolgate adds a step at the end and never edits the ones before. Opening a file runs
//! the missing steps in one `IMMEDIATE` transaction, so two processes opening an old file at
//! once migrate it once. A file newer than this toolgate knows is refused, not guessed at.
//!
//! Why a `tool_calls` table beside the messages: each message is kept whole as JSON in
//! `messages.body` (the serde shape of `toolgate_llm::chat::Message`), so what goes back to a
//! provider on resume is exactly what came from it, reasoning and its opaque parts included,
//! with no reassembly from columns. `tool_calls` indexes the calls of each assistant message
//! (name, id, which message answered it and whether with an error) so that counting calls,
//! calls per tool or unanswered calls is a plain query.

use rusqlite::{Connection, TransactionBehavior};

/// The steps, in order; the schema version of a file is how many of them it has had.
pub(crate) const MIGRATIONS: &[&str] = &[
    // 0 → 1: the first schema.
    r#"
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        created_at TEXT NOT NULL,     -- RFC 3339 UTC
        updated_at TEXT NOT NULL,     -- RFC 3339 UTC, at the last message
        touched INTEGER NOT NULL,     -- order of last activity over the whole file
        title TEXT NOT NULL DEFAULT '',
        provider TEXT NOT NULL,
        model TEXT NOT NULL,          -- the model in use now (see messages.model)
        cwd TEXT NOT NULL
    );
    CREATE INDEX sessions_by_activity ON sessions (touched);

    CREATE TABLE messages (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,         -- 1, 2, ... within the session
        created_at TEXT NOT NULL,
        role TEXT NOT NULL,           -- user | assistant | tool_result
        body TEXT NOT NULL,           -- the message as JSON
        model TEXT,                   -- the model that wrote it (assistant messages)
        input_tokens INTEGER,         -- usage, when the provider reported it
        output_tokens INTEGER,
        cached_input_tokens INTEGER,
        reasoning_tokens INTEGER,
        PRIMARY KEY (session_id, seq)
    );

    CREATE TABLE tool_calls (
        session_id TEXT NOT NULL,
        call_seq INTEGER NOT NULL,    -- the assistant message that made it
        position INTEGER NOT NULL,    -- its place in that message's calls
        call_id TEXT NOT NULL,
        name TEXT NOT NULL,
        result_seq INTEGER,           -- the tool result answering it; NULL while unanswered
        is_error INTEGER,             -- that result's flag
        PRIMARY KEY (session_id, call_seq, position),
        FOREIGN KEY (session_id, call_seq) REFERENCES messages (session_id, seq)
            ON DELETE CASCADE
    );
    CREATE INDEX tool_calls_by_id ON tool_calls (session_id, call_id);
    "#,
];

/// What [`migrate`] found.
#[derive(Debug)]
pub(crate) enum Migration {
    /// Now at the latest version (possibly already).
    Current,
    /// The file is at `found`, newer than the `known` latest (or negative: not ours).
    Newer { found: i64, known: i64 },
}

/// Brings the file up to `steps.len()`.
pub(crate) fn migrate(connection: &Connection, steps: &[&str]) -> rusqlite::Result<Migration> {
    let known = steps.len() as i64;
    let version = user_version(connection)?;
    if !(0..=known).contains(&version) {
        return Ok(Migration::Newer { found: version, known });
    }
    if version == known {
        return Ok(Migration::Current);
    }
    let transaction =
        rusqlite::Transaction::new_unchecked(connection, TransactionBehavior::Immediate)?;
    // Another process may have migrated it between the read above and the lock.
    let version = user_version(&transaction)?;
    if !(0..=known).contains(&version) {
        return Ok(Migration::Newer { found: version, known });
    }
    for step in &steps[version as usize..] {
        transaction.execute_batch(step)?;
    }
    transaction.pragma_update(None, "user_version", known)?;
    transaction.commit()?;
    Ok(Migration::Current)
}

/// The file's schema version.
pub(crate) fn user_version(connection: &Connection) -> rusqlite::Result<i64> {
    connection.pragma_query_value(None, "user_version", |row| row.get(0))
}
