//! A program on a pseudo-terminal, read as a person reads it: what it has shown (terminal
//! escapes left out), waiting for a text to appear, typing, Ctrl-C and Ctrl-D. It answers
//! rustyline's cursor position query as a terminal would.

use std::io::{Read as _, Write as _};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use portable_pty::{CommandBuilder, PtySize, native_pty_system};
use tokio::sync::watch;
use tokio::time::Instant;

/// How long any one expected output may take.
pub(super) const TIMEOUT: Duration = Duration::from_secs(20);
/// The REPL's prompt, at the start of a line.
const PROMPT: &str = "\n› ";
/// rustyline's cursor position query, and the answer of a terminal whose cursor is in the
/// first column.
const CURSOR_QUERY: &[u8] = b"\x1b[6n";
const CURSOR_AT_LEFT: &[u8] = b"\x1b[1;1R";

/// What the terminal has shown, and whether the program has closed it.
#[derive(Default)]
struct Screen {
    bytes: Vec<u8>,
    closed: bool,
}

/// A program on a pseudo-terminal, read as a person reads it.
pub(super) struct Terminal {
    /// `None` once waited for.
    child: Option<Box<dyn portable_pty::Child + Send + Sync>>,
    writer: Arc<Mutex<Box<dyn std::io::Write + Send>>>,
    screen: watch::Receiver<Screen>,
    /// Characters of the screen's text (escapes left out) already matched.
    consumed: usize,
    /// When it was started.
    pub(super) started: Instant,
    _master: Box<dyn portable_pty::MasterPty + Send>,
}

impl Terminal {
    pub(super) fn spawn(command: CommandBuilder) -> Terminal {
        let pair = native_pty_system()
            .openpty(PtySize { rows: 40, cols: 120, pixel_width: 0, pixel_height: 0 })
            .expect("a pseudo-terminal");
        let started = Instant::now();
        let child = pair.slave.spawn_command(command).expect("spawn toolgate chat");
        drop(pair.slave);
        let mut reader = pair.master.try_clone_reader().expect("reader");
        let writer = Arc::new(Mutex::new(pair.master.take_writer().expect("writer")));
        let (sender, screen) = watch::channel(Screen::default());
        let answers = writer.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            let mut queries = 0;
            loop {
                let read = match reader.read(&mut buffer) {
                    Ok(0) | Err(_) => break,
                    Ok(read) => read,
                };
                let mut asked = 0;
                sender.send_modify(|screen| {
                    screen.bytes.extend_from_slice(&buffer[..read]);
                    asked = count(&screen.bytes, CURSOR_QUERY);
                });
                // Answered as a terminal would (the prompt is drawn after the answer).
                while queries < asked {
                    let mut writer = answers.lock().unwrap_or_else(PoisonError::into_inner);
                    let _ = writer.write_all(CURSOR_AT_LEFT);
                    let _ = writer.flush();
                    queries += 1;
                }
            }
            sender.send_modify(|screen| screen.closed = true);
        });
        Terminal { child: Some(child), writer, screen, consumed: 0, started, _master: pair.master }
    }

    /// Types `bytes`.
    pub(super) fn send(&self, bytes: &[u8]) {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        writer.write_all(bytes).expect("write to the terminal");
        writer.flush().expect("flush the terminal");
    }

    /// Types `line` and Enter.
    pub(super) fn line(&self, line: &str) {
        self.send(format!("{line}\r").as_bytes());
    }

    /// Ctrl-C.
    pub(super) fn interrupt(&self) {
        self.send(b"\x03");
    }

    /// Everything shown so far, escapes left out.
    pub(super) fn text(&self) -> String {
        plain(&self.screen.borrow().bytes)
    }

    /// Everything shown so far, as it was written.
    pub(super) fn raw(&self) -> String {
        String::from_utf8_lossy(&self.screen.borrow().bytes).into_owned()
    }

    /// Waits for `needle` after what was matched before; the text up to its end.
    pub(super) async fn expect(&mut self, needle: &str) -> String {
        match self.try_expect(needle, TIMEOUT).await {
            Some(text) => text,
            None => panic!(
                "{needle:?} was not shown within {TIMEOUT:?}; after the last match:\n{}\n\
                 ---- the whole screen:\n{}",
                self.text().chars().skip(self.consumed).collect::<String>(),
                self.text()
            ),
        }
    }

    /// The same, giving up (`None`) after `timeout`.
    pub(super) async fn try_expect(&mut self, needle: &str, timeout: Duration) -> Option<String> {
        let consumed = self.consumed;
        let mut found = None;
        let waited = tokio::time::timeout(
            timeout,
            self.screen.wait_for(|screen| {
                let text: String = plain(&screen.bytes).chars().skip(consumed).collect();
                if let Some(at) = text.find(needle) {
                    found = Some(text[..at + needle.len()].to_owned());
                    return true;
                }
                screen.closed
            }),
        )
        .await
        .map(drop);
        match (waited, found) {
            (Ok(_), Some(text)) => {
                self.consumed += text.chars().count();
                Some(text)
            }
            (Ok(_), None) => panic!(
                "the program left before showing {needle:?}:\n{}",
                self.text().chars().skip(consumed).collect::<String>()
            ),
            (Err(_), _) => None,
        }
    }

    /// Waits for the next prompt; the text before it.
    pub(super) async fn prompt(&mut self) -> String {
        self.expect(PROMPT).await
    }

    /// Ctrl-D at the prompt; the exit status.
    pub(super) async fn leave(mut self) -> portable_pty::ExitStatus {
        self.send(b"\x04");
        let mut child = self.child.take().expect("not waited for yet");
        let mut killer = child.clone_killer();
        let waited =
            tokio::time::timeout(TIMEOUT, tokio::task::spawn_blocking(move || child.wait())).await;
        match waited {
            Ok(status) => status.expect("join").expect("wait"),
            Err(_) => {
                let _ = killer.kill();
                panic!("chat did not leave on Ctrl-D:\n{}", self.text())
            }
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.kill();
        }
    }
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack.windows(needle.len()).filter(|window| *window == needle).count()
}

/// `bytes` as text without terminal escapes (CSI, OSC and two-character ones) and carriage
/// returns.
fn plain(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('\x40'..='\x7e').contains(&c) {
                            break;
                        }
                    }
                }
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}
