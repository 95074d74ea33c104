//! One compact line per tool call.
//!
//! ```text
//! ⠹ fs__read_file {"path":"/tmp/notes.md"} 3/10 reading 1.4 s     (while it runs, on a terminal)
//! ✓ fs__read_file {"path":"/tmp/notes.md"} 1.2 KiB 340 ms
//! ✗ fs__write_file {"path":"/etc/x"} error: permission denied
//! ⊘ fs__delete {"path":"/"} declined: not that
//! ⏱ web__fetch {"url":"https://…"} timed out after 30 s
//! ⨯ web__fetch {"url":"https://…"} cancelled
//! ```
//!
//! On a terminal, the calls that are running are shown below everything else, one line each,
//! with a spinner, their progress (MCP progress notifications) and the time so far, redrawn
//! every 100 ms by a small ticker task; a call that ends leaves its final line above them.
//! Calls made in parallel share that area ([`Board`]), so their lines do not overwrite each
//! other. When not on a terminal, a call is written once when it starts (`▸ name {args}`)
//! and once when it ends, with no escapes and no redrawing.
//!
//! Verbose: the full arguments when a call starts and the result's text when it ends.

use std::io::{self, Write};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

use anstyle::AnsiColor;
use serde_json::{Map, Value};
use tokio::time::Instant;
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

use super::{Paint, one_line, sanitize, terminal_width};

const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];
const TICK: Duration = Duration::from_millis(100);
/// Columns of arguments shown on a call's line.
const SHORT_ARGS: usize = 60;
/// Columns of an error's first line shown.
const SHORT_ERROR: usize = 120;

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// A result of `bytes` bytes; `text` is shown with `--verbose`.
    Ok { bytes: usize, text: String },
    /// It failed (an error result, or the call could not be made).
    Error { message: String },
    /// The pipeline or the person refused it.
    Declined { reason: String },
    /// It took longer than its timeout.
    TimedOut { message: String },
    /// The person cancelled it.
    Cancelled,
}

/// Where tool lines are written: the area of running calls on one output.
#[derive(Clone)]
pub(crate) struct Board {
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for Board {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Board").finish_non_exhaustive()
    }
}

struct Inner {
    out: Box<dyn Write + Send>,
    /// A terminal: running calls are drawn and redrawn.
    live: bool,
    paint: Paint,
    width: usize,
    running: Vec<Running>,
    next_id: u64,
    /// Lines of the running area now on the screen.
    drawn: usize,
    /// Drawing is held (a question is being asked).
    paused: usize,
    frame: usize,
    ticking: bool,
}

struct Running {
    id: u64,
    name: String,
    args: String,
    started: Instant,
    progress: Option<String>,
}

impl Board {
    /// A board writing to `out`; `live` when `out` is a terminal `width` columns wide.
    pub(crate) fn new(
        out: impl Write + Send + 'static,
        live: bool,
        paint: Paint,
        width: usize,
    ) -> Board {
        let inner = Inner {
            out: Box::new(out),
            live,
            paint,
            width: width.max(20),
            running: Vec::new(),
            next_id: 0,
            drawn: 0,
            paused: 0,
            frame: 0,
            ticking: false,
        };
        Board { inner: Arc::new(Mutex::new(inner)) }
    }

    /// The board on stderr, made by the first call (live when `is_tty`).
    pub(crate) fn stderr(is_tty: bool, paint: Paint) -> Board {
        static STDERR: OnceLock<Board> = OnceLock::new();
        STDERR.get_or_init(|| Board::new(io::stderr(), is_tty, paint, terminal_width())).clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A call of `name` with `arguments` starts.
    pub(crate) fn start(
        &self,
        name: &str,
        arguments: &Map<String, Value>,
        verbose: bool,
    ) -> ToolLine {
        let args = short_args(arguments);
        let mut inner = self.lock();
        let id = inner.next_id;
        inner.next_id += 1;
        let mut text = String::new();
        if !inner.live {
            text.push_str(&format!("{} {}", inner.paint.dim("▸"), one_line(name)));
            if !args.is_empty() {
                text.push_str(&format!(" {}", inner.paint.dim(&args)));
            }
            text.push('\n');
        } else if verbose {
            text.push_str(&format!("{} {}\n", inner.paint.dim("▸"), one_line(name)));
        }
        if verbose && !arguments.is_empty() {
            let pretty = serde_json::to_string_pretty(arguments).unwrap_or_default();
            text.push_str(&indented(&pretty, inner.paint));
        }
        inner.running.push(Running {
            id,
            name: one_line(name),
            args,
            started: Instant::now(),
            progress: None,
        });
        inner.print_above(&text);
        let tick = inner.live && !inner.ticking && tokio::runtime::Handle::try_current().is_ok();
        if tick {
            inner.ticking = true;
            tokio::spawn(ticker(Arc::downgrade(&self.inner)));
        }
        drop(inner);
        ToolLine { board: self.clone(), id, verbose, done: false }
    }

    /// Clears the running calls from the screen and stops redrawing them until the guard is
    /// dropped: for questions, and anything else written to the same terminal meanwhile.
    pub(crate) fn pause(&self) -> Paused {
        let mut inner = self.lock();
        inner.clear();
        inner.paused += 1;
        let _ = inner.out.flush();
        Paused { board: self.clone() }
    }
}

/// Drawing is held while this lives; see [`Board::pause`].
#[must_use = "drawing resumes when this is dropped"]
#[derive(Debug)]
pub(crate) struct Paused {
    board: Board,
}

impl Drop for Paused {
    fn drop(&mut self) {
        let mut inner = self.board.lock();
        inner.paused -= 1;
        inner.draw();
    }
}

async fn ticker(inner: Weak<Mutex<Inner>>) {
    let mut interval = tokio::time::interval(TICK);
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    interval.tick().await;
    loop {
        interval.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        let mut inner = inner.lock().unwrap_or_else(PoisonError::into_inner);
        if inner.running.is_empty() {
            inner.ticking = false;
            return;
        }
        inner.frame += 1;
        inner.redraw();
    }
}

impl Inner {
    /// Writes `text` (whole lines) above the running calls.
    fn print_above(&mut self, text: &str) {
        self.clear();
        let _ = self.out.write_all(text.as_bytes());
        self.draw();
    }

    /// Erases the running calls' lines (the cursor is on the line below them).
    fn clear(&mut self) {
        if self.drawn > 0 {
            let _ = write!(self.out, "\x1b[{}A\x1b[J", self.drawn);
            self.drawn = 0;
        }
    }

    fn draw(&mut self) {
        if self.live && self.paused == 0 {
            let spinner = SPINNER[self.frame % SPINNER.len()];
            let now = Instant::now();
            let mut text = String::new();
            for running in &self.running {
                let mut rest = running.args.clone();
                if let Some(progress) = &running.progress {
                    rest.push(' ');
                    rest.push_str(progress);
                }
                rest.push(' ');
                rest.push_str(&elapsed(now - running.started));
                let room = self.width.saturating_sub(running.name.width() + 3);
                let rest = truncate(rest.trim_start(), room);
                let line = format!(
                    "{} {} {}",
                    self.paint.fg(AnsiColor::Cyan, spinner),
                    truncate(&running.name, self.width - 3),
                    self.paint.dim(&rest)
                );
                text.push_str(line.trim_end());
                text.push('\n');
            }
            let _ = self.out.write_all(text.as_bytes());
            self.drawn = self.running.len();
        }
        let _ = self.out.flush();
    }

    fn redraw(&mut self) {
        if self.live && self.paused == 0 {
            self.clear();
            self.draw();
        }
    }
}

/// A running call's line; see the module documentation. Dropped without [`ToolLine::finish`],
/// the call is shown as cancelled.
#[derive(Debug)]
pub(crate) struct ToolLine {
    board: Board,
    id: u64,
    verbose: bool,
    done: bool,
}

impl ToolLine {
    /// A call of `name` with `arguments` starts, shown on stderr (live when `is_tty`).
    pub(crate) fn start(
        name: &str,
        arguments: &Map<String, Value>,
        is_tty: bool,
        paint: Paint,
        verbose: bool,
    ) -> ToolLine {
        Board::stderr(is_tty, paint).start(name, arguments, verbose)
    }

    /// MCP progress: `progress` of `total` (if known), with the server's message.
    pub(crate) fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let mut text = match total {
            Some(total) if total > 0.0 => format!("{}/{}", number(progress), number(total)),
            _ => number(progress),
        };
        if let Some(message) = message.map(one_line).filter(|m| !m.is_empty()) {
            text.push(' ');
            text.push_str(&message);
        }
        let mut inner = self.board.lock();
        if let Some(running) = inner.running.iter_mut().find(|r| r.id == self.id) {
            running.progress = Some(text);
        }
        inner.redraw();
    }

    /// The call ended after `elapsed`: its final line.
    pub(crate) fn finish(mut self, outcome: Outcome, elapsed: Duration) {
        self.done = true;
        self.end(&outcome, Some(elapsed));
    }

    fn end(&self, outcome: &Outcome, elapsed: Option<Duration>) {
        let mut inner = self.board.lock();
        let Some(at) = inner.running.iter().position(|r| r.id == self.id) else { return };
        let running = inner.running.remove(at);
        let elapsed = elapsed.unwrap_or_else(|| running.started.elapsed());
        let paint = inner.paint;
        // Not live, the arguments were on the line that said it started.
        let args = if inner.live && !running.args.is_empty() {
            format!(" {}", paint.dim(&running.args))
        } else {
            String::new()
        };
        let name = &running.name;
        let mut text = match outcome {
            Outcome::Ok { bytes, .. } => format!(
                "{} {name}{args} {}",
                paint.fg(AnsiColor::Green, "✓"),
                paint.dim(&format!("{} {}", size(*bytes), duration(elapsed)))
            ),
            Outcome::Error { message } => format!(
                "{} {name}{args} {}",
                paint.fg(AnsiColor::Red, "✗"),
                paint.fg(AnsiColor::Red, &format!("error: {}", first_line(message)))
            ),
            Outcome::Declined { reason } => {
                let reason = first_line(reason);
                let declined = if reason.is_empty() {
                    "declined".to_owned()
                } else {
                    format!("declined: {reason}")
                };
                format!("{} {name}{args} {}", paint.fg(AnsiColor::Yellow, "⊘"), declined)
            }
            Outcome::TimedOut { .. } => format!(
                "{} {name}{args} timed out after {}",
                paint.fg(AnsiColor::Yellow, "⏱"),
                duration(elapsed)
            ),
            Outcome::Cancelled => {
                format!("{} {name}{args} {}", paint.dim("⨯"), paint.dim("cancelled"))
            }
        };
        text.push('\n');
        if self.verbose {
            match outcome {
                Outcome::Ok { text: result, .. } if !result.is_empty() => {
                    text.push_str(&indented(result, paint))
                }
                Outcome::Error { message: full }
                | Outcome::Declined { reason: full }
                | Outcome::TimedOut { message: full }
                    if full.lines().nth(1).is_some() || full.width() > SHORT_ERROR =>
                {
                    text.push_str(&indented(full, paint))
                }
                _ => {}
            }
        }
        inner.print_above(&text);
    }
}

impl Drop for ToolLine {
    fn drop(&mut self) {
        if !self.done {
            self.end(&Outcome::Cancelled, None);
        }
    }
}

/// The arguments on one line, compact JSON, clipped.
fn short_args(arguments: &Map<String, Value>) -> String {
    if arguments.is_empty() {
        return String::new();
    }
    let json = serde_json::to_string(arguments).unwrap_or_default();
    truncate(&one_line(&json), SHORT_ARGS)
}

fn first_line(text: &str) -> String {
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    truncate(&one_line(line), SHORT_ERROR)
}

fn indented(text: &str, paint: Paint) -> String {
    let mut out = String::new();
    for line in sanitize(text).lines() {
        out.push_str("    ");
        out.push_str(&paint.dim(line));
        out.push('\n');
    }
    out
}

/// `text` in at most `width` columns, ending with `…` when cut.
fn truncate(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars() {
        let w = c.width().unwrap_or(0);
        if used + w + 1 > width {
            break;
        }
        out.push(c);
        used += w;
    }
    out.push('…');
    out
}

fn number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 { format!("{}", n as i64) } else { format!("{n:.1}") }
}

/// `1023 B`, `1.2 KiB`, `3.4 MiB`.
pub(crate) fn size(bytes: usize) -> String {
    toolgate_llm::content::bytes(bytes)
}

/// `340 ms`, `1.2 s`, `2m 03s`.
pub(crate) fn duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        format!("{ms} ms")
    } else if ms < 60_000 {
        format!("{:.1} s", d.as_secs_f64())
    } else {
        format!("{}m {:02}s", d.as_secs() / 60, d.as_secs() % 60)
    }
}

/// The time so far on a running call's line: whole tenths of seconds.
fn elapsed(d: Duration) -> String {
    if d.as_secs() < 60 {
        format!("{}.{} s", d.as_secs(), d.subsec_millis() / 100)
    } else {
        duration(d)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A writer whose bytes the test can read.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    impl Shared {
        fn take(&self) -> String {
            String::from_utf8(std::mem::take(&mut *self.0.lock().unwrap())).unwrap()
        }
    }

    fn args(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn piped_each_call_is_a_line_when_it_starts_and_one_when_it_ends() {
        let out = Shared::default();
        let board = Board::new(out.clone(), false, Paint::new(false), 80);
        let path = args(json!({"path": "/tmp/x"}));
        board
            .start("fs__read", &path, false)
            .finish(Outcome::Ok { bytes: 1234, text: "hello".into() }, ms(340));
        board
            .start("fs__write", &path, false)
            .finish(Outcome::Error { message: "\npermission denied\nmore detail".into() }, ms(5));
        board
            .start("fs__delete", &Map::new(), false)
            .finish(Outcome::Declined { reason: "not that".into() }, ms(1));
        board
            .start("web__fetch", &Map::new(), false)
            .finish(Outcome::TimedOut { message: "no answer".into() }, Duration::from_secs(30));
        let line = board.start("web__get", &Map::new(), false);
        line.progress(3.0, Some(10.0), Some("ignored when piped"));
        drop(line);
        board
            .start("x__y", &Map::new(), false)
            .finish(Outcome::Declined { reason: String::new() }, ms(1));
        assert_eq!(
            out.take(),
            "▸ fs__read {\"path\":\"/tmp/x\"}\n\
             ✓ fs__read 1.2 KiB 340 ms\n\
             ▸ fs__write {\"path\":\"/tmp/x\"}\n\
             ✗ fs__write error: permission denied\n\
             ▸ fs__delete\n\
             ⊘ fs__delete declined: not that\n\
             ▸ web__fetch\n\
             ⏱ web__fetch timed out after 30.0 s\n\
             ▸ web__get\n\
             ⨯ web__get cancelled\n\
             ▸ x__y\n\
             ⊘ x__y declined\n"
        );
    }

    #[test]
    fn verbose_shows_the_full_arguments_and_the_result() {
        let out = Shared::default();
        let board = Board::new(out.clone(), false, Paint::new(false), 80);
        let line = board.start("fs__read", &args(json!({"path": "/tmp/x", "n": 2})), true);
        line.finish(Outcome::Ok { bytes: 12, text: "line one\nline \x1b two".into() }, ms(7));
        assert_eq!(
            out.take(),
            "▸ fs__read {\"path\":\"/tmp/x\",\"n\":2}\n    {\n      \"path\": \"/tmp/x\",\n      \
             \"n\": 2\n    }\n✓ fs__read 12 B 7 ms\n    line one\n    line \\u{1b} two\n"
        );
        let line = board.start("t", &Map::new(), true);
        line.finish(Outcome::Error { message: "first\nsecond".into() }, ms(7));
        assert_eq!(out.take(), "▸ t\n✗ t error: first\n    first\n    second\n");
    }

    #[test]
    fn long_arguments_and_errors_are_clipped() {
        let out = Shared::default();
        let board = Board::new(out.clone(), false, Paint::new(false), 80);
        let line = board.start("t", &args(json!({"text": "x".repeat(100)})), false);
        line.finish(Outcome::Error { message: "e".repeat(200) }, ms(1));
        let got = out.take();
        let shown = format!("{{\"text\":\"{}…", "x".repeat(SHORT_ARGS - 10));
        assert!(got.starts_with(&format!("▸ t {shown}\n")), "{got}");
        assert!(got.contains(&format!("error: {}…\n", "e".repeat(SHORT_ERROR - 1))), "{got}");
    }

    #[tokio::test(start_paused = true)]
    async fn on_a_terminal_running_calls_spin_below_what_has_ended() {
        let out = Shared::default();
        let board = Board::new(out.clone(), true, Paint::new(false), 80);
        let a = board.start("a__one", &args(json!({"q": 1})), false);
        assert_eq!(out.take(), "⠋ a__one {\"q\":1} 0.0 s\n");
        let b = board.start("b__two", &Map::new(), false);
        assert_eq!(out.take(), "\x1b[1A\x1b[J⠋ a__one {\"q\":1} 0.0 s\n⠋ b__two 0.0 s\n");
        // The ticker redraws every 100 ms.
        tokio::time::sleep(ms(150)).await;
        assert_eq!(out.take(), "\x1b[2A\x1b[J⠙ a__one {\"q\":1} 0.1 s\n⠙ b__two 0.1 s\n");
        a.progress(3.0, Some(10.0), Some("reading"));
        assert_eq!(
            out.take(),
            "\x1b[2A\x1b[J⠙ a__one {\"q\":1} 3/10 reading 0.1 s\n⠙ b__two 0.1 s\n"
        );
        a.finish(Outcome::Ok { bytes: 2048, text: String::new() }, ms(150));
        assert_eq!(out.take(), "\x1b[2A\x1b[J✓ a__one {\"q\":1} 2.0 KiB 150 ms\n⠙ b__two 0.1 s\n");
        // A question holds the drawing; the ticker draws nothing meanwhile.
        let paused = board.pause();
        assert_eq!(out.take(), "\x1b[1A\x1b[J");
        tokio::time::sleep(ms(300)).await;
        assert_eq!(out.take(), "");
        drop(paused);
        assert_eq!(out.take(), "⠼ b__two 0.4 s\n");
        b.finish(Outcome::Cancelled, ms(450));
        assert_eq!(out.take(), "\x1b[1A\x1b[J⨯ b__two cancelled\n");
        // With nothing running, the ticker stops.
        tokio::time::sleep(ms(500)).await;
        assert_eq!(out.take(), "");
        assert!(!board.lock().ticking);
    }

    #[tokio::test(start_paused = true)]
    async fn live_lines_fit_the_width() {
        let out = Shared::default();
        let board = Board::new(out.clone(), true, Paint::new(false), 30);
        let line = board.start("server__tool", &args(json!({"path": "/a/long/path/name"})), false);
        let got = out.take();
        assert_eq!(got, "⠋ server__tool {\"path\":\"/a/lo…\n");
        assert!(got.trim_end().width() <= 30);
        line.finish(Outcome::Ok { bytes: 0, text: String::new() }, ms(1));
    }

    #[test]
    fn colours_when_asked() {
        let out = Shared::default();
        let board = Board::new(out.clone(), false, Paint::new(true), 80);
        board
            .start("t", &Map::new(), false)
            .finish(Outcome::Ok { bytes: 1, text: String::new() }, ms(1));
        assert_eq!(out.take(), "\x1b[2m▸\x1b[0m t\n\x1b[32m✓\x1b[0m t \x1b[2m1 B 1 ms\x1b[0m\n");
    }

    #[test]
    fn sizes_and_durations() {
        assert_eq!(size(1023), "1023 B");
        assert_eq!(size(1260), "1.2 KiB");
        assert_eq!(size(3 * 1024 * 1024 + 400 * 1024), "3.4 MiB");
        assert_eq!(duration(ms(340)), "340 ms");
        assert_eq!(duration(ms(1234)), "1.2 s");
        assert_eq!(duration(Duration::from_secs(123)), "2m 03s");
        assert_eq!(number(2.5), "2.5");
        assert_eq!(number(3.0), "3");
    }
}
