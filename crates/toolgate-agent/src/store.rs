//! Sessions: the agent's conversations stored in SQLite, resumable and exportable.
//!
//! One file (by default [`default_path`]: `<data dir>/toolgate/sessions.db`, for example
//! `~/.local/share/toolgate/sessions.db` on Linux) holds every session: its meta (id, times,
//! title, provider, model, working directory), its messages in order, the tool calls they made
//! and the usage each response reported. The tables and how the file's version evolves are in
//! `store/schema.rs`.
//!
//! - **Nothing answered is lost.** [`Store::append`] writes each message in a transaction of
//!   its own as soon as the agent has it (the user's prompt before the model is asked, each
//!   assistant turn when it is complete, each tool result when its call returns), with
//!   `synchronous = FULL`: what was committed survives a crash of the process or of the machine.
//! - **Resuming after a crash.** A session that stopped mid-turn may end with an assistant turn
//!   whose calls have no results. [`Store::load`] answers each with an error result saying
//!   [`NOT_ANSWERED`], after the results that did arrive, so the conversation is one a provider
//!   accepts; the file is not changed (see [`LoadedSession::repaired`]).
//! - **Several processes.** The file is in WAL mode with a busy timeout ([`BUSY_TIMEOUT`]);
//!   writes take the lock up front (`BEGIN IMMEDIATE`), so two toolgates appending to the same
//!   file wait for each other instead of failing.
//! - **Ids** are eleven characters, sortable by creation time (`store/id.rs`); everything that
//!   reads a session a person names ([`Store::resolve`], [`Store::load`], [`Store::export`])
//!   takes any unique prefix of one. What writes takes the whole id.
//! - **Usage and cost.** The usage a provider reported is kept per message, with the model
//!   that wrote it; [`Store::usage_total`] sums it and estimates the cost from
//!   [`pricing`](toolgate_llm::pricing)'s dated list prices (no cost when a model is not in the table).
//!
//! - **Private.** The file holds conversations and tool results: toolgate creates it readable
//!   and writable by its owner only (`0600`; SQLite gives its `-wal` and `-shm` files the same
//!   mode), in folders it creates for its owner only (`0700`, [`create_private_dirs`]), and
//!   logs a warning naming an existing file that others may read or write.
//!
//! A [`Store`] is one SQLite connection: `Send`, not `Sync`; its calls block (each is a few
//! small statements), so async code calls it from `spawn_blocking` or behind a mutex.

mod id;
mod markdown;
mod repair;
mod schema;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use serde::Serialize;
use toolgate_llm::chat::{Message, Part, Usage};
use toolgate_llm::pricing;

/// The text of the result [`Store::load`] gives a call that was never answered.
pub const NOT_ANSWERED: &str = "not answered: the session ended before this call finished";

/// How long a write waits for another process holding the file's lock.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(10);

/// The longest title, in characters (a longer first line is clipped and ends with `…`).
pub const TITLE_CHARS: usize = 60;

/// Where sessions are stored unless configured otherwise: `<data dir>/toolgate/sessions.db`
/// (`dirs::data_dir()`: `$XDG_DATA_HOME` or `~/.local/share` on Linux,
/// `~/Library/Application Support` on macOS, `%APPDATA%` on Windows).
pub fn default_path() -> Result<PathBuf, StoreError> {
    dirs::data_dir()
        .map(|dir| dir.join("toolgate").join("sessions.db"))
        .ok_or(StoreError::NoDataDir)
}

/// Creates `dir` and the folders above it that are missing, each readable, writable and
/// searchable by its owner only (`0700`): they hold conversations. Folders that exist are left
/// as they are.
pub fn create_private_dirs(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Creates the file at `path` for its owner only (`0600`) if there is none, so that SQLite
/// opens a private file (and gives its `-wal` and `-shm` files the same mode); an existing
/// file is left as it is.
fn create_private_file(path: &Path) -> std::io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).map(drop)
}

/// What to say about the sessions file at `path` when others than its owner may read or write
/// it; `None` when it is private or not there yet.
fn access_warning(path: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(path).ok()?.permissions().mode() & 0o777;
        (mode & 0o077 != 0).then(|| {
            format!(
                "the sessions database {} can be read or written by others than its owner \
                 (mode {mode:04o}): it holds your conversations and tool results; restrict it \
                 with `chmod 600 {}`",
                path.display(),
                path.display()
            )
        })
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// What went wrong, with the file and the session it concerns.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// No data directory is known for this user (`HOME` unset, ...).
    #[error("cannot find the user's data directory to keep sessions in; name a sessions file")]
    NoDataDir,
    /// The file's directory could not be made.
    #[error("cannot create {path}, the directory of the sessions database: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file could not be created.
    #[error("cannot create the sessions database {path}: {source}")]
    Create {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file could not be opened or set up.
    #[error("cannot open the sessions database {path}: {source}")]
    Open {
        /// The file.
        path: PathBuf,
        /// Why.
        source: rusqlite::Error,
    },
    /// The file was written by a newer toolgate.
    #[error(
        "the sessions database {path} has schema version {found}; this toolgate knows up to \
         {known}: use a newer toolgate or another sessions file"
    )]
    NewerSchema {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// The latest this build knows.
        known: i64,
    },
    /// A statement failed.
    #[error("sessions database {path}: cannot {action}: {source}")]
    Sql {
        /// The file.
        path: PathBuf,
        /// What it was doing, naming the session.
        action: String,
        /// Why.
        source: rusqlite::Error,
    },
    /// No session has this id (or one starting with it).
    #[error("no session {id:?} in {path}")]
    NotFound {
        /// What was asked for.
        id: String,
        /// The file.
        path: PathBuf,
    },
    /// Several sessions start with this prefix.
    #[error("{prefix:?} names several sessions in {path}: {}; type more of the id", candidates.join(", "))]
    Ambiguous {
        /// What was asked for.
        prefix: String,
        /// Some of the sessions it could be (at most five).
        candidates: Vec<String>,
        /// The file.
        path: PathBuf,
    },
    /// A stored message is not a message this toolgate can read.
    #[error(
        "sessions database {path}: message {seq} of session {session} cannot be read: {source}"
    )]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// The session.
        session: String,
        /// The message's place in it.
        seq: i64,
        /// Why.
        source: serde_json::Error,
    },
}

/// How a new session starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSession {
    /// The provider's name as configured (`openai`, `anthropic`, `deepseek`, ...).
    pub provider: String,
    /// The model.
    pub model: String,
    /// The working directory of the agent.
    pub cwd: PathBuf,
}

/// A session's meta.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SessionMeta {
    /// Its id.
    pub id: String,
    /// When it was made, RFC 3339 UTC with milliseconds.
    pub created_at: String,
    /// When its last message was stored, RFC 3339 UTC with milliseconds.
    pub updated_at: String,
    /// The first line of its first user message, clipped to [`TITLE_CHARS`]; empty before that.
    pub title: String,
    /// The provider in use (the latest one, see [`Store::set_model`]).
    pub provider: String,
    /// The model in use (the latest one).
    pub model: String,
    /// The agent's working directory.
    pub cwd: String,
}

/// A session in [`Store::list`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSummary {
    /// Its meta.
    #[serde(flatten)]
    pub meta: SessionMeta,
    /// How many messages it has.
    pub messages: u64,
    /// How many tool calls its assistant turns made.
    pub tool_calls: u64,
    /// What it used and cost.
    #[serde(flatten)]
    pub total: UsageTotal,
}

/// The usage of a session, summed over the responses whose provider reported it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct UsageTotal {
    /// The sum.
    pub usage: Usage,
    /// The estimated cost in USD ([`pricing`](toolgate_llm::pricing)); `None` when no usage was reported or a model
    /// that reported some is not in the price table.
    pub cost_usd: Option<f64>,
}

/// A session read back.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedSession {
    /// Its meta.
    pub meta: SessionMeta,
    /// Its messages in order, every tool call answered: ready to send to a provider.
    pub messages: Vec<Message>,
    /// The ids of the calls that had no result and were given one saying [`NOT_ANSWERED`].
    /// Those results are not stored; append new messages after them as usual.
    pub repaired: Vec<String>,
    /// Stored results that answered no call and were left out (zero unless the file was
    /// written by something else).
    pub dropped_results: usize,
}

/// The formats of [`Store::export`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `{"session": meta, "usage", "cost_usd", "not_answered": [call ids], "messages": [...]}`,
    /// the messages as stored, in `toolgate_llm::chat`'s serde shape.
    Json,
    /// A readable transcript: headings per message, tool calls and results in code blocks.
    Markdown,
}

impl FromStr for Format {
    type Err = String;

    fn from_str(text: &str) -> Result<Format, String> {
        match text.to_ascii_lowercase().as_str() {
            "json" => Ok(Format::Json),
            "markdown" | "md" => Ok(Format::Markdown),
            other => Err(format!("unknown export format {other:?}: json or markdown")),
        }
    }
}

/// The sessions file, open.
#[derive(Debug)]
pub struct Store {
    connection: Connection,
    path: PathBuf,
}

fn now() -> (SystemTime, String) {
    let now = SystemTime::now();
    (now, humantime::format_rfc3339_millis(now).to_string())
}

impl Store {
    /// Opens (creating it and its directory if needed, for the owner only) the sessions file
    /// at `path`, bringing its schema up to date.
    pub fn open(path: impl AsRef<Path>) -> Result<Store, StoreError> {
        let path = path.as_ref().to_path_buf();
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            create_private_dirs(dir)
                .map_err(|source| StoreError::CreateDir { path: dir.to_path_buf(), source })?;
        }
        if let Some(warning) = access_warning(&path) {
            tracing::warn!("{warning}");
        }
        create_private_file(&path)
            .map_err(|source| StoreError::Create { path: path.clone(), source })?;
        let connection = Connection::open(&path)
            .map_err(|source| StoreError::Open { path: path.clone(), source })?;
        Store::set_up(connection, path, true)
    }

    /// A store in memory, gone when dropped (for tests).
    pub fn in_memory() -> Result<Store, StoreError> {
        let path = PathBuf::from(":memory:");
        let connection = Connection::open_in_memory()
            .map_err(|source| StoreError::Open { path: path.clone(), source })?;
        Store::set_up(connection, path, false)
    }

    fn set_up(connection: Connection, path: PathBuf, wal: bool) -> Result<Store, StoreError> {
        Store::set_up_with(connection, path, wal, schema::MIGRATIONS)
    }

    fn set_up_with(
        connection: Connection,
        path: PathBuf,
        wal: bool,
        migrations: &[&str],
    ) -> Result<Store, StoreError> {
        let open_error = |source| StoreError::Open { path: path.clone(), source };
        connection.busy_timeout(BUSY_TIMEOUT).map_err(open_error)?;
        if wal {
            connection
                .pragma_update_and_check(None, "journal_mode", "WAL", |row| row.get::<_, String>(0))
                .map_err(open_error)?;
        }
        connection.pragma_update(None, "synchronous", "FULL").map_err(open_error)?;
        connection.pragma_update(None, "foreign_keys", true).map_err(open_error)?;
        match schema::migrate(&connection, migrations).map_err(open_error)? {
            schema::Migration::Current => Ok(Store { connection, path }),
            schema::Migration::Newer { found, known } => {
                Err(StoreError::NewerSchema { path, found, known })
            }
        }
    }

    /// The file (`:memory:` for [`Store::in_memory`]).
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sql<T>(
        &self,
        action: impl FnOnce() -> String,
        result: rusqlite::Result<T>,
    ) -> Result<T, StoreError> {
        result.map_err(|source| StoreError::Sql {
            path: self.path.clone(),
            action: action(),
            source,
        })
    }

    fn write(&self, action: &dyn Fn() -> String) -> Result<rusqlite::Transaction<'_>, StoreError> {
        self.sql(
            action,
            rusqlite::Transaction::new_unchecked(&self.connection, TransactionBehavior::Immediate),
        )
    }

    /// Starts a session.
    pub fn create(&self, new: &NewSession) -> Result<SessionMeta, StoreError> {
        let action = || "create a session".to_string();
        let (time, stamp) = now();
        let cwd = new.cwd.display().to_string();
        let transaction = self.write(&action)?;
        let touched = self.next_touch(&transaction, &action)?;
        // The random part makes a collision within one second unlikely; retry if it happens.
        let mut attempt = 0;
        let id = loop {
            let id = id::new_id(time);
            let inserted = transaction.execute(
                "INSERT OR IGNORE INTO sessions
                     (id, created_at, updated_at, touched, title, provider, model, cwd)
                 VALUES (?1, ?2, ?2, ?3, '', ?4, ?5, ?6)",
                params![id, stamp, touched, new.provider, new.model, cwd],
            );
            if self.sql(action, inserted)? == 1 {
                break id;
            }
            attempt += 1;
            if attempt == 16 {
                return Err(StoreError::Sql {
                    path: self.path.clone(),
                    action: action(),
                    source: rusqlite::Error::SqliteFailure(
                        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_CONSTRAINT),
                        Some("no free session id in this second".into()),
                    ),
                });
            }
        };
        self.sql(action, transaction.commit())?;
        Ok(SessionMeta {
            id,
            created_at: stamp.clone(),
            updated_at: stamp,
            title: String::new(),
            provider: new.provider.clone(),
            model: new.model.clone(),
            cwd,
        })
    }

    fn next_touch(
        &self,
        transaction: &rusqlite::Transaction<'_>,
        action: &dyn Fn() -> String,
    ) -> Result<i64, StoreError> {
        self.sql(
            action,
            transaction.query_row(
                "SELECT coalesce(max(touched), 0) + 1 FROM sessions",
                [],
                |row| row.get(0),
            ),
        )
    }

    /// Stores `message` as the next message of `session` (its whole id), with the usage the
    /// provider reported for it (assistant turns), in a transaction of its own. The first user
    /// message with text gives the session its title. Returns the message's place (1, 2, ...).
    pub fn append(
        &self,
        session: &str,
        message: &Message,
        usage: Option<Usage>,
    ) -> Result<u64, StoreError> {
        let action = || format!("append a message to session {session}");
        let body = serde_json::to_string(message).expect("a message always serializes to JSON");
        let (role, title) = match message {
            Message::User { content } => ("user", title_of(content)),
            Message::Assistant(_) => ("assistant", None),
            Message::ToolResult(_) => ("tool_result", None),
        };
        let (_, stamp) = now();
        let transaction = self.write(&action)?;
        let touched = self.next_touch(&transaction, &action)?;
        let model: Option<String> = self.sql(
            action,
            transaction
                .query_row(
                    "UPDATE sessions SET updated_at = ?2, touched = ?3,
                         title = CASE WHEN title = '' AND ?4 IS NOT NULL THEN ?4 ELSE title END
                     WHERE id = ?1 RETURNING model",
                    params![session, stamp, touched, title],
                    |row| row.get(0),
                )
                .optional(),
        )?;
        let Some(model) = model else {
            return Err(self.not_found(session));
        };
        let seq: i64 = self.sql(
            action,
            transaction.query_row(
                "SELECT coalesce(max(seq), 0) + 1 FROM messages WHERE session_id = ?1",
                [session],
                |row| row.get(0),
            ),
        )?;
        let written_by = (role == "assistant" || usage.is_some()).then_some(model);
        let usage_column = |pick: fn(&Usage) -> u64| usage.as_ref().map(|u| pick(u) as i64);
        let inserted = transaction.execute(
            "INSERT INTO messages (session_id, seq, created_at, role, body, model, input_tokens,
                 output_tokens, cached_input_tokens, reasoning_tokens)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                session,
                seq,
                stamp,
                role,
                body,
                written_by,
                usage_column(|u| u.input_tokens),
                usage_column(|u| u.output_tokens),
                usage_column(|u| u.cached_input_tokens),
                usage_column(|u| u.reasoning_tokens),
            ],
        );
        self.sql(action, inserted)?;
        match message {
            Message::Assistant(turn) => {
                for (position, call) in turn.tool_calls.iter().enumerate() {
                    let inserted = transaction.execute(
                        "INSERT INTO tool_calls (session_id, call_seq, position, call_id, name)
                         VALUES (?1, ?2, ?3, ?4, ?5)",
                        params![session, seq, position as i64, call.id, call.name],
                    );
                    self.sql(action, inserted)?;
                }
            }
            Message::ToolResult(result) => {
                // The latest unanswered call with this id (ids may repeat across turns).
                let updated = transaction.execute(
                    "UPDATE tool_calls SET result_seq = ?3, is_error = ?4
                     WHERE rowid = (SELECT rowid FROM tool_calls
                         WHERE session_id = ?1 AND call_id = ?2 AND result_seq IS NULL
                         ORDER BY call_seq DESC, position LIMIT 1)",
                    params![session, result.call_id, seq, result.is_error],
                );
                self.sql(action, updated)?;
            }
            Message::User { .. } => {}
        }
        self.sql(action, transaction.commit())?;
        Ok(seq as u64)
    }

    /// Records that `session` goes on with another provider or model (`/model`); the messages
    /// stored so far keep the model that wrote them, for their cost.
    pub fn set_model(&self, session: &str, provider: &str, model: &str) -> Result<(), StoreError> {
        let action = || format!("change the model of session {session}");
        let changed = self.connection.execute(
            "UPDATE sessions SET provider = ?2, model = ?3 WHERE id = ?1",
            params![session, provider, model],
        );
        match self.sql(action, changed)? {
            0 => Err(self.not_found(session)),
            _ => Ok(()),
        }
    }

    /// The usage `session` (its whole id) reported, summed, and its estimated cost.
    pub fn usage_total(&self, session: &str) -> Result<UsageTotal, StoreError> {
        let action = || format!("sum the usage of session {session}");
        let mut statement = self.sql(
            action,
            self.connection.prepare_cached(
                "SELECT coalesce(model, ''), sum(input_tokens), sum(output_tokens),
                     sum(cached_input_tokens), sum(reasoning_tokens)
                 FROM messages WHERE session_id = ?1 AND input_tokens IS NOT NULL
                 GROUP BY model",
            ),
        )?;
        let rows = statement.query_map([session], |row| {
            let column = |index| row.get::<_, i64>(index).map(|n| n.max(0) as u64);
            Ok((
                row.get::<_, String>(0)?,
                Usage {
                    input_tokens: column(1)?,
                    output_tokens: column(2)?,
                    cached_input_tokens: column(3)?,
                    reasoning_tokens: column(4)?,
                },
            ))
        });
        let rows = self.sql(action, rows.and_then(|rows| rows.collect::<Result<Vec<_>, _>>()))?;
        let mut total = UsageTotal { usage: Usage::default(), cost_usd: Some(0.0) };
        for (model, usage) in &rows {
            total.usage = total.usage + *usage;
            total.cost_usd =
                total.cost_usd.zip(pricing::cost_usd(model, usage)).map(|(a, b)| a + b);
        }
        if rows.is_empty() {
            total.cost_usd = None;
        }
        Ok(total)
    }

    /// The `limit` sessions with the most recent activity, newest first.
    pub fn list(&self, limit: usize) -> Result<Vec<SessionSummary>, StoreError> {
        let action = || "list the sessions".to_string();
        let mut statement = self.sql(
            action,
            self.connection.prepare_cached(
                "SELECT s.id, s.created_at, s.updated_at, s.title, s.provider, s.model, s.cwd,
                     (SELECT count(*) FROM messages m WHERE m.session_id = s.id),
                     (SELECT count(*) FROM tool_calls t WHERE t.session_id = s.id)
                 FROM sessions s ORDER BY s.touched DESC LIMIT ?1",
            ),
        )?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let rows = statement.query_map([limit], |row| {
            Ok((meta_from_row(row)?, row.get::<_, i64>(7)? as u64, row.get::<_, i64>(8)? as u64))
        });
        let rows = self.sql(action, rows.and_then(|rows| rows.collect::<Result<Vec<_>, _>>()))?;
        rows.into_iter()
            .map(|(meta, messages, tool_calls)| {
                let total = self.usage_total(&meta.id)?;
                Ok(SessionSummary { meta, messages, tool_calls, total })
            })
            .collect()
    }

    /// The session with the most recent activity (for `--resume` without an id).
    pub fn latest(&self) -> Result<Option<SessionMeta>, StoreError> {
        let action = || "find the latest session".to_string();
        let row = self.connection.query_row(
            &format!("SELECT {META_COLUMNS} FROM sessions ORDER BY touched DESC LIMIT 1"),
            [],
            meta_from_row,
        );
        self.sql(action, row.optional())
    }

    /// The session whose id is `id_or_prefix` or, failing that, the only one starting with it.
    pub fn resolve(&self, id_or_prefix: &str) -> Result<SessionMeta, StoreError> {
        let Some(prefix) = id::normalize(id_or_prefix) else {
            return Err(self.not_found(id_or_prefix));
        };
        let action = || format!("look up session {prefix}");
        let mut statement = self.sql(
            action,
            self.connection.prepare_cached(&format!(
                "SELECT {META_COLUMNS} FROM sessions
                 WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id = ?1 DESC, id LIMIT 6"
            )),
        )?;
        let rows = statement.query_map([&prefix], meta_from_row);
        let mut found =
            self.sql(action, rows.and_then(|rows| rows.collect::<Result<Vec<_>, _>>()))?;
        match found.len() {
            0 => Err(self.not_found(id_or_prefix)),
            1 => Ok(found.remove(0)),
            _ if found[0].id == prefix => Ok(found.remove(0)),
            _ => Err(StoreError::Ambiguous {
                prefix: id_or_prefix.to_string(),
                candidates: found.into_iter().take(5).map(|meta| meta.id).collect(),
                path: self.path.clone(),
            }),
        }
    }

    /// The session named by `id_or_prefix` with its messages, every call answered (see
    /// [`LoadedSession::repaired`]).
    pub fn load(&self, id_or_prefix: &str) -> Result<LoadedSession, StoreError> {
        let (meta, stored) = self.stored(id_or_prefix)?;
        let (messages, repaired) = repair::repair(stored);
        Ok(LoadedSession {
            meta,
            messages,
            repaired: repaired.answered,
            dropped_results: repaired.dropped,
        })
    }

    /// The meta and messages exactly as stored.
    fn stored(&self, id_or_prefix: &str) -> Result<(SessionMeta, Vec<Message>), StoreError> {
        let meta = self.resolve(id_or_prefix)?;
        let action = || format!("read the messages of session {}", meta.id);
        let mut statement = self.sql(
            action,
            self.connection.prepare_cached(
                "SELECT seq, body FROM messages WHERE session_id = ?1 ORDER BY seq",
            ),
        )?;
        let rows = statement
            .query_map([&meta.id], |row| Ok((row.get::<_, i64>(0)?, row.get::<_, String>(1)?)));
        let rows = self.sql(action, rows.and_then(|rows| rows.collect::<Result<Vec<_>, _>>()))?;
        let messages = rows
            .into_iter()
            .map(|(seq, body)| {
                serde_json::from_str(&body).map_err(|source| StoreError::Corrupt {
                    path: self.path.clone(),
                    session: meta.id.clone(),
                    seq,
                    source,
                })
            })
            .collect::<Result<Vec<Message>, _>>()?;
        Ok((meta, messages))
    }

    /// The session named by `id_or_prefix` as text in `format`.
    pub fn export(&self, id_or_prefix: &str, format: Format) -> Result<String, StoreError> {
        let (meta, stored) = self.stored(id_or_prefix)?;
        let total = self.usage_total(&meta.id)?;
        match format {
            Format::Json => {
                let (_, repaired) = repair::repair(stored.clone());
                let document = serde_json::json!({
                    "session": meta,
                    "usage": total.usage,
                    "cost_usd": total.cost_usd,
                    "not_answered": repaired.answered,
                    "messages": stored,
                });
                Ok(serde_json::to_string_pretty(&document).expect("JSON values always serialize"))
            }
            Format::Markdown => {
                let (messages, _) = repair::repair(stored);
                Ok(markdown::transcript(&meta, &total, &messages))
            }
        }
    }

    /// Deletes the session `id` (its whole id) and everything in it.
    pub fn delete(&self, id: &str) -> Result<(), StoreError> {
        let action = || format!("delete session {id}");
        let deleted = self.connection.execute("DELETE FROM sessions WHERE id = ?1", [id]);
        match self.sql(action, deleted)? {
            0 => Err(self.not_found(id)),
            _ => Ok(()),
        }
    }

    fn not_found(&self, id: &str) -> StoreError {
        StoreError::NotFound { id: id.to_string(), path: self.path.clone() }
    }
}

const META_COLUMNS: &str = "id, created_at, updated_at, title, provider, model, cwd";

fn meta_from_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<SessionMeta> {
    Ok(SessionMeta {
        id: row.get(0)?,
        created_at: row.get(1)?,
        updated_at: row.get(2)?,
        title: row.get(3)?,
        provider: row.get(4)?,
        model: row.get(5)?,
        cwd: row.get(6)?,
    })
}

/// The title a user message gives a session: the first non-blank line of its text, clipped.
fn title_of(content: &[Part]) -> Option<String> {
    let line = content
        .iter()
        .filter_map(|part| match part {
            Part::Text { text } => Some(text.as_str()),
            Part::Image { .. } => None,
        })
        .flat_map(str::lines)
        .map(str::trim)
        .find(|line| !line.is_empty())?;
    let mut chars = line.chars();
    let clipped: String = chars.by_ref().take(TITLE_CHARS).collect();
    Some(if chars.next().is_some() {
        let mut shorter: String = clipped.chars().take(TITLE_CHARS - 1).collect();
        shorter.truncate(shorter.trim_end().len());
        shorter.push('…');
        shorter
    } else {
        clipped
    })
}
