//! Log lines with secrets and personal data replaced by `[REDACTED:<kind>]` before they reach
//! stderr, whoever wrote them: toolgate, a dependency (rmcp, hyper), or an upstream whose
//! stderr and log notifications toolgate relays. The `redact` interceptor keeps values from
//! the client and the recorder keeps them from the audit log; this keeps them from the log,
//! which neither can reach (an upstream that logs its own traffic, an error message that
//! quotes a value).
//!
//! The detectors are every built-in kind until the config is read, then what the audit log
//! uses (`[audit] detect` and every `redact` entry's kinds and custom detectors, see
//! [`set_detection`]). They are compiled when the first line is written, so a run that logs
//! nothing never compiles them.

use std::io;
use std::sync::{Arc, Mutex, PoisonError};

use toolgate_audit::secrets::{Detector, Selection};
use tracing_subscriber::fmt::MakeWriter;

/// What is looked for, and its detectors once compiled.
struct Detection {
    selection: Selection,
    detector: Option<Arc<Detector>>,
}

static DETECTION: Mutex<Option<Detection>> = Mutex::new(None);

/// From now on, log lines are scrubbed of what `selection` finds (and nothing when it is
/// empty).
pub(crate) fn set_detection(selection: Selection) {
    let mut detection = DETECTION.lock().unwrap_or_else(PoisonError::into_inner);
    *detection = Some(Detection { selection, detector: None });
}

/// The detectors in force, compiled on first use.
fn detector() -> Arc<Detector> {
    let mut detection = DETECTION.lock().unwrap_or_else(PoisonError::into_inner);
    let detection =
        detection.get_or_insert_with(|| Detection { selection: Selection::all(), detector: None });
    detection.detector.get_or_insert_with(|| Arc::new(Detector::new(&detection.selection))).clone()
}

/// `text` scrubbed.
pub(crate) fn scrub(text: &str) -> std::borrow::Cow<'_, str> {
    detector().redact(text).text
}

/// Stderr, one scrubbed log line at a time, for `tracing_subscriber`'s `fmt` layer (which
/// formats each event whole and writes it with one `write_all`, so a value is never split
/// between two writes).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct ScrubbedStderr;

impl<'a> MakeWriter<'a> for ScrubbedStderr {
    type Writer = LineWriter;

    fn make_writer(&'a self) -> LineWriter {
        LineWriter
    }
}

/// Writes what it is given to stderr, scrubbed.
#[derive(Debug)]
pub(crate) struct LineWriter;

impl io::Write for LineWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let text = String::from_utf8_lossy(bytes);
        io::stderr().lock().write_all(scrub(&text).as_bytes())?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().lock().flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_scrubbed_with_every_kind_until_told_otherwise() {
        let line = "upstream=fx: got AKIAIOSFODNN7EXAMPLE from jane.doe@example.com";
        assert_eq!(scrub(line), "upstream=fx: got [REDACTED:aws_access_key] from [REDACTED:email]");
        let mut only_custom = Selection::none();
        only_custom
            .add_custom(toolgate_audit::secrets::Custom::new("emp", "EMP-[0-9]{6}").unwrap())
            .unwrap();
        set_detection(only_custom);
        assert_eq!(scrub("EMP-004211 jane.doe@example.com"), "[REDACTED:emp] jane.doe@example.com");
        set_detection(Selection::all());
        assert_eq!(scrub("EMP-004211 jane.doe@example.com"), "EMP-004211 [REDACTED:email]");
    }

    #[test]
    fn a_float_whose_fraction_looks_like_a_card_is_left_whole() {
        // 4242424242424242 is Luhn-valid and starts like a Visa card.
        let line = r#"{"event":"tools/call/finished","duration_ms":0.4242424242424242}"#;
        assert_eq!(scrub(line), line);
        assert_eq!(scrub("card 4242424242424242"), "card [REDACTED:card_number]");
    }
}
