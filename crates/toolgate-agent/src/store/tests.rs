//! Tests of the sessions store: files made and migrated, messages round-tripped, crashes
//! (a store dropped mid-turn, and a real process aborted inside a write), two connections on
//! one file, lookups by prefix, usage and cost, exports.

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use toolgate_llm::chat::{AssistantTurn, Message, Part, Reasoning, ToolCall, ToolResult, Usage};

use super::*;

fn new_session(model: &str) -> NewSession {
    NewSession {
        provider: "openai".into(),
        model: model.into(),
        cwd: PathBuf::from("/home/me/project"),
    }
}

fn turn(text: &str, calls: &[(&str, &str, &str)]) -> Message {
    Message::Assistant(AssistantTurn {
        text: text.into(),
        reasoning: None,
        tool_calls: calls
            .iter()
            .map(|(id, name, arguments)| ToolCall {
                id: (*id).into(),
                name: (*name).into(),
                arguments: (*arguments).into(),
            })
            .collect(),
    })
}

fn result(id: &str, name: &str, text: &str, is_error: bool) -> Message {
    Message::ToolResult(ToolResult {
        call_id: id.into(),
        name: name.into(),
        content: vec![Part::text(text)],
        is_error,
    })
}

fn usage(input: u64, output: u64, cached: u64) -> Usage {
    Usage {
        input_tokens: input,
        output_tokens: output,
        cached_input_tokens: cached,
        reasoning_tokens: 0,
    }
}

fn raw(path: &Path) -> Connection {
    let connection = Connection::open(path).expect("open raw");
    connection.busy_timeout(BUSY_TIMEOUT).expect("busy timeout");
    connection
}

fn count(connection: &Connection, sql: &str) -> i64 {
    connection.query_row(sql, [], |row| row.get(0)).expect(sql)
}

#[test]
fn open_makes_the_file_and_its_directory_in_wal_mode_at_the_latest_schema() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("deeper").join("still").join("sessions.db");
    let store = Store::open(&path).expect("open");
    assert_eq!(store.path(), path);
    assert!(path.is_file());
    let mode: String = store
        .connection
        .pragma_query_value(None, "journal_mode", |row| row.get(0))
        .expect("journal mode");
    assert_eq!(mode, "wal");
    let timeout: i64 = store
        .connection
        .pragma_query_value(None, "busy_timeout", |row| row.get(0))
        .expect("timeout");
    assert_eq!(timeout, BUSY_TIMEOUT.as_millis() as i64);
    assert_eq!(
        schema::user_version(&store.connection).expect("version"),
        schema::MIGRATIONS.len() as i64
    );
    let meta = store.create(&new_session("gpt-4o")).expect("create");
    drop(store);
    // Reopening runs no step again and keeps what was there.
    let store = Store::open(&path).expect("reopen");
    assert_eq!(store.latest().expect("latest"), Some(meta));
}

#[test]
fn a_directory_that_cannot_be_made_is_named() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("a-file");
    std::fs::write(&file, "").expect("write");
    let error = Store::open(file.join("sessions.db")).expect_err("under a file");
    assert!(matches!(&error, StoreError::CreateDir { path, .. } if *path == file), "{error:?}");
    assert!(error.to_string().contains("a-file"), "{error}");
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).expect("metadata").permissions().mode() & 0o777
}

/// The file holds conversations and tool results: toolgate makes it, its WAL and the folders
/// it creates for their owner only.
#[cfg(unix)]
#[test]
fn the_file_and_the_folders_made_for_it_are_the_owners_only() {
    let dir = tempfile::tempdir().expect("temp dir");
    let folder = dir.path().join("data").join("toolgate");
    let path = folder.join("sessions.db");
    let store = Store::open(&path).expect("open");
    let meta = store.create(&new_session("gpt-4o")).expect("create");
    store.append(&meta.id, &Message::user_text("a secret plan"), None).expect("append");
    assert_eq!(mode(&path), 0o600);
    let wal = folder.join("sessions.db-wal");
    assert!(wal.exists(), "WAL mode keeps a -wal file while open");
    assert_eq!(mode(&wal), 0o600, "SQLite gives the WAL the database's mode");
    assert_eq!(mode(&folder), 0o700);
    assert_eq!(mode(&dir.path().join("data")), 0o700);
    assert_eq!(access_warning(&path), None);
}

/// An existing file others may read is used as it is, and named in a warning.
#[cfg(unix)]
#[test]
fn a_file_others_can_read_is_named_in_a_warning() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sessions.db");
    drop(Store::open(&path).expect("open"));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let warning = access_warning(&path).expect("a warning");
    assert!(warning.contains(&path.display().to_string()), "{warning}");
    assert!(warning.contains("mode 0644") && warning.contains("chmod 600"), "{warning}");
    drop(Store::open(&path).expect("still opens"));
    assert_eq!(mode(&path), 0o644, "the user's file is left as it is");
    // A folder that was there is left as it was, too.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    drop(Store::open(dir.path().join("other.db")).expect("open"));
    assert_eq!(mode(dir.path()), 0o755);
}

#[test]
fn a_file_from_a_newer_toolgate_is_refused() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sessions.db");
    drop(Store::open(&path).expect("open"));
    raw(&path).pragma_update(None, "user_version", 99).expect("set version");
    let error = Store::open(&path).expect_err("newer");
    assert!(
        matches!(&error, StoreError::NewerSchema { found: 99, known, .. } if *known == schema::MIGRATIONS.len() as i64),
        "{error:?}"
    );
    assert!(error.to_string().contains("sessions.db"), "{error}");
    assert!(error.to_string().contains("schema version 99"), "{error}");
}

#[test]
fn a_later_migration_step_evolves_an_existing_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sessions.db");
    let id = {
        let store = Store::open(&path).expect("open");
        let meta = store.create(&new_session("gpt-4o")).expect("create");
        store.append(&meta.id, &Message::user_text("hello"), None).expect("append");
        meta.id
    };
    let mut steps = schema::MIGRATIONS.to_vec();
    steps.push("ALTER TABLE sessions ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0;");
    let store = Store::set_up_with(raw(&path), path.clone(), true, &steps)
        .expect("migrated to the next version");
    assert_eq!(schema::user_version(&store.connection).expect("version"), steps.len() as i64);
    assert_eq!(count(&store.connection, "SELECT count(*) FROM sessions WHERE pinned = 0"), 1);
    assert_eq!(store.load(&id).expect("load").messages, vec![Message::user_text("hello")]);
    drop(store);
    // The file is now newer than this build's schema.
    assert!(matches!(Store::open(&path), Err(StoreError::NewerSchema { .. })));
}

#[test]
fn messages_round_trip_in_order_with_their_calls_results_and_title() {
    let store = Store::in_memory().expect("store");
    let meta = store.create(&new_session("gpt-4o")).expect("create");
    assert_eq!(meta.id.len(), id::LENGTH);
    assert_eq!(meta.title, "");
    assert_eq!(meta.cwd, "/home/me/project");
    assert!(meta.created_at.ends_with('Z') && meta.created_at.len() == 24, "{}", meta.created_at);
    let reasoning = Message::Assistant(AssistantTurn {
        text: "I will look.".into(),
        reasoning: Some(Reasoning {
            text: "the user wants files".into(),
            opaque: Some(serde_json::json!([{"type": "thinking", "signature": "c2ln"}])),
        }),
        tool_calls: vec![
            ToolCall {
                id: "call_1".into(),
                name: "fs__list".into(),
                arguments: r#"{"path":"/tmp"}"#.into(),
            },
            ToolCall {
                id: "call_2".into(),
                name: "fs__read".into(),
                arguments: "{\"path\": \"/tm".into(),
            },
        ],
    });
    let messages = vec![
        Message::User {
            content: vec![
                Part::Image { mime_type: "image/png".into(), data: "iVBORw0KGgo=".into() },
                Part::text(
                    "\n   List the files in /tmp and tell me which is the largest one of them all, please\nthanks",
                ),
            ],
        },
        reasoning,
        result("call_1", "fs__list", "a\nb", false),
        result("call_2", "fs__read", "the arguments of fs__read are not valid JSON", true),
        turn("a is the largest.", &[]),
        Message::user_text("a second question does not change the title"),
    ];
    for (n, message) in messages.iter().enumerate() {
        let reported = matches!(message, Message::Assistant(_)).then(|| usage(100, 10, 0));
        assert_eq!(store.append(&meta.id, message, reported).expect("append"), n as u64 + 1);
    }
    let loaded = store.load(&meta.id).expect("load");
    assert_eq!(loaded.messages, messages);
    assert!(loaded.repaired.is_empty());
    assert_eq!(loaded.dropped_results, 0);
    assert_eq!(loaded.meta.title.chars().count(), TITLE_CHARS);
    assert!(
        loaded.meta.title.starts_with("List the files in /tmp and tell me"),
        "{}",
        loaded.meta.title
    );
    assert!(loaded.meta.title.ends_with('…'), "{}", loaded.meta.title);
    assert!(loaded.meta.updated_at >= meta.created_at);

    // The calls are countable by query, answered, with the result's error flag.
    let calls: Vec<(String, String, Option<i64>, Option<bool>)> = store
        .connection
        .prepare("SELECT call_id, name, result_seq, is_error FROM tool_calls ORDER BY call_seq, position")
        .expect("prepare")
        .query_map([], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?)))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows");
    assert_eq!(
        calls,
        vec![
            ("call_1".into(), "fs__list".into(), Some(3), Some(false)),
            ("call_2".into(), "fs__read".into(), Some(4), Some(true)),
        ]
    );

    let listed = store.list(10).expect("list");
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].messages, 6);
    assert_eq!(listed[0].tool_calls, 2);
    assert_eq!(listed[0].total.usage, usage(200, 20, 0));
    assert_eq!(listed[0].meta, loaded.meta);
}

#[test]
fn short_titles_are_whole_and_blank_prompts_give_none() {
    assert_eq!(title_of(&[Part::text("  hi  ")]), Some("hi".into()));
    assert_eq!(title_of(&[Part::text("\n\n  ")]), None);
    assert_eq!(title_of(&[]), None);
    let exact: String = "x".repeat(TITLE_CHARS);
    assert_eq!(title_of(&[Part::text(exact.clone())]), Some(exact.clone()));
    let longer = format!("{exact}y");
    let clipped = title_of(&[Part::text(longer)]).expect("title");
    assert_eq!(clipped.chars().count(), TITLE_CHARS);
    assert!(clipped.ends_with("x…"));
    // An image-only first prompt leaves the title to the next one with text.
    let store = Store::in_memory().expect("store");
    let meta = store.create(&new_session("m")).expect("create");
    let image = Message::User {
        content: vec![Part::Image { mime_type: "image/png".into(), data: "AA==".into() }],
    };
    store.append(&meta.id, &image, None).expect("append");
    store.append(&meta.id, &Message::user_text("what is this?"), None).expect("append");
    assert_eq!(store.resolve(&meta.id).expect("meta").title, "what is this?");
}

#[test]
fn a_session_dropped_mid_turn_is_answered_on_load_and_can_go_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sessions.db");
    let id = {
        let store = Store::open(&path).expect("open");
        let meta = store.create(&new_session("gpt-4o")).expect("create");
        store.append(&meta.id, &Message::user_text("do three things"), None).expect("user");
        let calls = [("c1", "a", "{}"), ("c2", "b", "{}"), ("c3", "c", "{}")];
        store.append(&meta.id, &turn("", &calls), Some(usage(50, 5, 0))).expect("turn");
        store.append(&meta.id, &result("c2", "b", "done", false), None).expect("one result");
        // Dropped here, as if the process died while c1 and c3 ran.
        meta.id
    };
    let store = Store::open(&path).expect("reopen");
    let loaded = store.load(&id).expect("load");
    let not_answered = |id: &str, name: &str| result(id, name, NOT_ANSWERED, true);
    assert_eq!(
        loaded.messages[2..],
        [result("c2", "b", "done", false), not_answered("c1", "a"), not_answered("c3", "c")]
    );
    assert_eq!(loaded.repaired, vec!["c1".to_string(), "c3".into()]);
    // Nothing was written by loading.
    assert_eq!(count(&store.connection, "SELECT count(*) FROM messages"), 3);
    assert_eq!(
        count(&store.connection, "SELECT count(*) FROM tool_calls WHERE result_seq IS NULL"),
        2
    );

    // Resumed: the conversation goes on after the answered gap, which load fills again.
    store.append(&id, &Message::user_text("go on"), None).expect("user");
    store.append(&id, &turn("done now", &[]), Some(usage(80, 4, 0))).expect("turn");
    let again = store.load(&id).expect("load again");
    assert_eq!(again.messages.len(), 7);
    assert_eq!(again.messages[3..5], [not_answered("c1", "a"), not_answered("c3", "c")]);
    assert_eq!(again.messages[5], Message::user_text("go on"));
    assert_eq!(again.repaired, vec!["c1".to_string(), "c3".into()]);
}

#[test]
fn stray_results_are_left_out_on_load() {
    let store = Store::in_memory().expect("store");
    let meta = store.create(&new_session("m")).expect("create");
    store.append(&meta.id, &Message::user_text("q"), None).expect("user");
    store.append(&meta.id, &result("ghost", "t", "from nowhere", false), None).expect("stray");
    store.append(&meta.id, &turn("", &[("c1", "t", "")]), None).expect("turn");
    store.append(&meta.id, &result("c1", "t", "ok", false), None).expect("result");
    store.append(&meta.id, &result("c1", "t", "twice", false), None).expect("duplicate");
    let loaded = store.load(&meta.id).expect("load");
    assert_eq!(loaded.dropped_results, 2);
    assert_eq!(
        loaded.messages,
        vec![Message::user_text("q"), turn("", &[("c1", "t", "")]), result("c1", "t", "ok", false)]
    );
}

/// Run as a child process by the test below: stores a turn, then dies inside a write.
#[test]
fn crash_child() {
    let Some(path) = std::env::var_os(CRASH_ENV) else {
        return;
    };
    let store = Store::open(&path).expect("open");
    let meta = store.create(&new_session("gpt-4o")).expect("create");
    store.append(&meta.id, &Message::user_text("read two files"), None).expect("user");
    let calls = [("c1", "fs__read", r#"{"path":"a"}"#), ("c2", "fs__read", r#"{"path":"b"}"#)];
    store.append(&meta.id, &turn("", &calls), Some(usage(10, 2, 0))).expect("turn");
    store
        .append(&meta.id, &result("c1", "fs__read", "contents of a", false), None)
        .expect("result");
    // The second result is being written when the process dies.
    let transaction =
        rusqlite::Transaction::new_unchecked(&store.connection, TransactionBehavior::Immediate)
            .expect("begin");
    transaction
        .execute(
            "INSERT INTO messages (session_id, seq, created_at, role, body) VALUES (?1, 4, 'now', 'tool_result', ?2)",
            params![meta.id, serde_json::to_string(&result("c2", "fs__read", "contents of b", false)).expect("json")],
        )
        .expect("insert");
    std::process::abort();
}

const CRASH_ENV: &str = "TOOLGATE_AGENT_TEST_CRASH_DB";

#[test]
fn a_process_aborted_mid_write_loses_nothing_it_had_stored() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sessions.db");
    let status = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "store::tests::crash_child", "--nocapture", "--test-threads=1"])
        .env(CRASH_ENV, &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("run the child");
    assert!(!status.success(), "the child must have aborted: {status}");
    let store = Store::open(&path).expect("reopen after the crash");
    let meta = store.latest().expect("latest").expect("the child's session");
    let loaded = store.load(&meta.id).expect("load");
    assert_eq!(loaded.meta.title, "read two files");
    assert_eq!(loaded.messages.len(), 4, "{:#?}", loaded.messages);
    assert_eq!(loaded.messages[2], result("c1", "fs__read", "contents of a", false));
    assert_eq!(loaded.messages[3], result("c2", "fs__read", NOT_ANSWERED, true));
    assert_eq!(loaded.repaired, vec!["c2".to_string()]);
    assert_eq!(store.usage_total(&meta.id).expect("usage").usage, usage(10, 2, 0));
    // The file is writable again: the dead process's lock is gone.
    store.append(&meta.id, &Message::user_text("again"), None).expect("append after the crash");
}

#[test]
fn two_connections_share_one_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("sessions.db");
    let first = Store::open(&path).expect("first");
    let second = Store::open(&path).expect("second");
    let meta = first.create(&new_session("m")).expect("create");
    second.append(&meta.id, &Message::user_text("from the second"), None).expect("append");
    assert_eq!(
        first.load(&meta.id).expect("load").messages,
        vec![Message::user_text("from the second")]
    );

    // Writers on two threads (two connections) at once: every message lands, numbered in turn.
    let writers: Vec<_> = (0..2)
        .map(|writer| {
            let path = path.clone();
            let id = meta.id.clone();
            std::thread::spawn(move || {
                let store = Store::open(&path).expect("open");
                for n in 0..40 {
                    store
                        .append(&id, &Message::user_text(format!("{writer}-{n}")), None)
                        .expect("append while the other writes");
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().expect("writer");
    }
    let messages = second.load(&meta.id).expect("load").messages;
    assert_eq!(messages.len(), 81);
    for writer in 0..2 {
        let mine: Vec<&Message> = messages
            .iter()
            .filter(|m| match m {
                Message::User { content } => {
                    matches!(&content[0], Part::Text { text } if text.starts_with(&format!("{writer}-")))
                }
                _ => false,
            })
            .collect();
        let expected: Vec<Message> =
            (0..40).map(|n| Message::user_text(format!("{writer}-{n}"))).collect();
        assert_eq!(mine.into_iter().cloned().collect::<Vec<_>>(), expected);
    }
    let seqs = count(&first.connection, "SELECT count(DISTINCT seq) FROM messages");
    assert_eq!(seqs, 81);
    assert_eq!(count(&first.connection, "SELECT max(seq) FROM messages"), 81);
}

#[test]
fn sessions_are_found_by_unique_prefix_and_ambiguity_is_an_error() {
    let store = Store::in_memory().expect("store");
    let ids: Vec<String> =
        (0..5).map(|_| store.create(&new_session("m")).expect("create").id).collect();
    let id = &ids[0];
    assert_eq!(store.resolve(id).expect("whole").id, *id);
    assert_eq!(store.resolve(&id.to_uppercase()).expect("upper case").id, *id);
    // Made in the same few seconds, they share the time part: a short prefix is ambiguous.
    match store.resolve(&id[..3]) {
        Err(StoreError::Ambiguous { prefix, candidates, path }) => {
            assert_eq!(prefix, &id[..3]);
            assert_eq!(candidates.len(), 5);
            assert!(candidates.contains(id));
            assert_eq!(path, Path::new(":memory:"));
        }
        other => panic!("expected ambiguity, got {other:?}"),
    }
    let message = store.resolve(&id[..3]).expect_err("ambiguous").to_string();
    assert!(message.contains("type more of the id"), "{message}");
    // The shortest prefix that names one.
    let unique = (1..=id.len())
        .map(|n| &id[..n])
        .find(|prefix| ids.iter().filter(|other| other.starts_with(prefix)).count() == 1)
        .expect("some prefix is unique");
    assert_eq!(store.resolve(unique).expect("unique prefix").id, *id);
    assert_eq!(store.load(unique).expect("load by prefix").meta.id, *id);
    for unknown in ["zzzzzzzzzzz", "", "not-an-id", "012345678901"] {
        assert!(
            matches!(store.resolve(unknown), Err(StoreError::NotFound { ref id, .. }) if id == unknown),
            "{unknown:?}"
        );
    }
    assert!(store.load("zzzz").expect_err("unknown").to_string().contains("no session \"zzzz\""));
}

#[test]
fn latest_and_list_follow_the_last_activity() {
    let store = Store::in_memory().expect("store");
    assert_eq!(store.latest().expect("latest"), None);
    assert!(store.list(10).expect("list").is_empty());
    let older = store.create(&new_session("m")).expect("older");
    let newer = store.create(&new_session("m")).expect("newer");
    assert_eq!(store.latest().expect("latest").expect("some").id, newer.id);
    store.append(&older.id, &Message::user_text("back to the first"), None).expect("append");
    assert_eq!(store.latest().expect("latest").expect("some").id, older.id);
    let listed: Vec<String> =
        store.list(10).expect("list").into_iter().map(|s| s.meta.id).collect();
    assert_eq!(listed, vec![older.id.clone(), newer.id.clone()]);
    assert_eq!(store.list(1).expect("list").len(), 1);
    assert_eq!(store.list(0).expect("list").len(), 0);
}

#[test]
fn usage_and_cost_are_summed_per_model() {
    let store = Store::in_memory().expect("store");
    let meta = store.create(&new_session("gpt-4o")).expect("create");
    assert_eq!(store.usage_total(&meta.id).expect("none yet"), UsageTotal::default());
    store.append(&meta.id, &Message::user_text("q"), None).expect("user");
    store
        .append(&meta.id, &turn("a", &[]), Some(usage(1_000_000, 100_000, 400_000)))
        .expect("turn");
    let total = store.usage_total(&meta.id).expect("total");
    assert_eq!(total.usage, usage(1_000_000, 100_000, 400_000));
    let cost = total.cost_usd.expect("gpt-4o is priced");
    assert!((cost - 3.0).abs() < 1e-9, "{cost}");

    // After /model, new answers are priced at the new model; the old ones keep theirs.
    store.set_model(&meta.id, "anthropic", "claude-sonnet-4-20250514").expect("set model");
    store.append(&meta.id, &turn("b", &[]), Some(usage(1_000_000, 0, 0))).expect("turn");
    let cost = store.usage_total(&meta.id).expect("total").cost_usd.expect("both priced");
    assert!((cost - 6.0).abs() < 1e-9, "{cost}");
    assert_eq!(store.resolve(&meta.id).expect("meta").model, "claude-sonnet-4-20250514");

    // A model not in the table: tokens summed, no cost.
    store.set_model(&meta.id, "ollama", "llama3.1:8b").expect("set model");
    store.append(&meta.id, &turn("c", &[]), Some(usage(10, 1, 0))).expect("turn");
    let total = store.usage_total(&meta.id).expect("total");
    assert_eq!(total.usage.input_tokens, 2_000_010);
    assert_eq!(total.cost_usd, None);
    assert!(matches!(store.set_model("nope", "p", "m"), Err(StoreError::NotFound { .. })));
}

#[test]
fn writing_to_an_unknown_session_is_an_error_naming_it() {
    let store = Store::in_memory().expect("store");
    let error = store.append("0000000zzzz", &Message::user_text("q"), None).expect_err("unknown");
    assert!(matches!(&error, StoreError::NotFound { id, .. } if id == "0000000zzzz"), "{error:?}");
    assert_eq!(error.to_string(), "no session \"0000000zzzz\" in :memory:");
}

#[test]
fn an_unreadable_message_names_its_session_and_place() {
    let store = Store::in_memory().expect("store");
    let meta = store.create(&new_session("m")).expect("create");
    store.append(&meta.id, &Message::user_text("q"), None).expect("user");
    store
        .connection
        .execute("UPDATE messages SET body = '{\"role\":\"robot\"}' WHERE seq = 1", [])
        .expect("spoil");
    let error = store.load(&meta.id).expect_err("corrupt");
    assert!(
        matches!(&error, StoreError::Corrupt { session, seq: 1, .. } if *session == meta.id),
        "{error:?}"
    );
    assert!(error.to_string().contains(&format!("message 1 of session {}", meta.id)), "{error}");
}

#[test]
fn delete_removes_the_session_with_its_messages_and_calls() {
    let store = Store::in_memory().expect("store");
    let kept = store.create(&new_session("m")).expect("create");
    let gone = store.create(&new_session("m")).expect("create");
    for id in [&kept.id, &gone.id] {
        store.append(id, &Message::user_text("q"), None).expect("user");
        store.append(id, &turn("", &[("c1", "t", "")]), None).expect("turn");
        store.append(id, &result("c1", "t", "ok", false), None).expect("result");
    }
    store.delete(&gone.id).expect("delete");
    assert!(matches!(store.resolve(&gone.id), Err(StoreError::NotFound { .. })));
    assert_eq!(count(&store.connection, "SELECT count(*) FROM messages"), 3);
    assert_eq!(count(&store.connection, "SELECT count(*) FROM tool_calls"), 1);
    assert_eq!(store.load(&kept.id).expect("kept").messages.len(), 3);
    assert!(matches!(store.delete(&gone.id), Err(StoreError::NotFound { .. })));
    // Deleting takes a whole id, never a prefix.
    assert!(matches!(store.delete(&kept.id[..10]), Err(StoreError::NotFound { .. })));
}

fn exported_session(store: &Store) -> SessionMeta {
    let meta = store.create(&new_session("gpt-4o")).expect("create");
    store.append(&meta.id, &Message::user_text("Show me `x.md`"), None).expect("user");
    let calls = [("c1", "fs__read", r#"{"path":"x.md"}"#), ("c2", "fs__stat", "{not json")];
    store.append(&meta.id, &turn("Reading it.", &calls), Some(usage(1000, 100, 0))).expect("turn");
    store
        .append(&meta.id, &result("c1", "fs__read", "```rust\nfn main() {}\n```", false), None)
        .expect("result");
    meta
}

#[test]
fn json_export_is_the_stored_conversation_in_the_chat_shape() {
    let store = Store::in_memory().expect("store");
    let meta = exported_session(&store);
    let json: Value =
        serde_json::from_str(&store.export(&meta.id[..], Format::Json).expect("export"))
            .expect("JSON");
    assert_eq!(json["session"]["id"], meta.id.as_str());
    assert_eq!(json["session"]["title"], "Show me `x.md`");
    assert_eq!(json["session"]["cwd"], "/home/me/project");
    assert_eq!(json["usage"]["input_tokens"], 1000);
    assert!(json["cost_usd"].as_f64().expect("priced") > 0.0);
    assert_eq!(json["not_answered"], serde_json::json!(["c2"]));
    let messages: Vec<Message> =
        serde_json::from_value(json["messages"].clone()).expect("chat shape");
    assert_eq!(messages.len(), 3, "as stored: the missing result is not invented here");
    assert_eq!(messages, store.stored(&meta.id).expect("stored").1);
    assert_eq!(json["messages"][1]["role"], "assistant");
    assert_eq!(json["messages"][1]["tool_calls"][0]["name"], "fs__read");
}

#[test]
fn markdown_export_is_a_readable_transcript() {
    let store = Store::in_memory().expect("store");
    let meta = exported_session(&store);
    let text = store.export(&meta.id, Format::Markdown).expect("export");
    assert!(text.starts_with("# Show me `x.md`\n\n"), "{text}");
    assert!(text.contains(&format!("- id: `{}`", meta.id)), "{text}");
    assert!(text.contains("- model: gpt-4o (openai)"), "{text}");
    assert!(
        text.contains("- tokens: 1000 in (0 cached), 100 out (0 reasoning); about $0.0035"),
        "{text}"
    );
    assert!(text.contains("## User\n\nShow me `x.md`\n"), "{text}");
    assert!(text.contains("## Assistant\n\nReading it.\n"), "{text}");
    assert!(
        text.contains(
            "**Tool call** `fs__read` (`c1`)\n\n```json\n{\n  \"path\": \"x.md\"\n}\n```\n"
        ),
        "{text}"
    );
    assert!(text.contains("**Tool call** `fs__stat` (`c2`)\n\n```\n{not json\n```\n"), "{text}");
    // A result holding a fence is fenced with more backticks.
    assert!(
        text.contains(
            "**Result** of `fs__read` (`c1`)\n\n````\n```rust\nfn main() {}\n```\n````\n"
        ),
        "{text}"
    );
    // The call the session never answered says so.
    assert!(
        text.contains(&format!(
            "**Result** of `fs__stat` (`c2`, error)\n\n```\n{NOT_ANSWERED}\n```"
        )),
        "{text}"
    );
    assert_eq!("md".parse::<Format>(), Ok(Format::Markdown));
    assert_eq!("JSON".parse::<Format>(), Ok(Format::Json));
    assert!("yaml".parse::<Format>().is_err());
}

#[test]
fn the_default_path_is_in_the_data_directory() {
    match default_path() {
        Ok(path) => {
            assert!(
                path.ends_with(Path::new("toolgate").join("sessions.db")),
                "{}",
                path.display()
            );
            assert!(path.is_absolute());
        }
        Err(error) => assert!(matches!(error, StoreError::NoDataDir)),
    }
}
