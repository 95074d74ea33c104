//! Write-ahead for `[audit] required`: an event that says when the audit log has it.
//!
//! [`Event::awaiting_write`](crate::Event::awaiting_write) gives an event a [`WriteSlot`]
//! and its publisher a [`Written`] to await. The audit sink fills the slot once it has
//! appended the event (or failed to). An event the sink never gets (its queue was full, its
//! pattern does not choose the event) leaves the slot empty: once every copy of the event is
//! gone, the wait ends with [`NotWritten::Lost`], so a publisher never waits on something no
//! one will do; and it waits at most the time it gives.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

/// What the audit sink reports about one event.
type Outcome = Result<(), String>;

/// The audit sink's side: filled once, by the first copy of the event written.
#[derive(Clone)]
pub struct WriteSlot(Arc<Mutex<Option<oneshot::Sender<Outcome>>>>);

impl WriteSlot {
    /// Reports what appending the event did (the first report counts).
    pub(crate) fn report(&self, outcome: Result<(), &crate::AuditError>) {
        let sender = self.0.lock().expect("write slot lock must not be poisoned").take();
        if let Some(sender) = sender {
            let _ =
                sender.send(outcome.map_err(|error| toolgate_core::ErrorChain(error).to_string()));
        }
    }
}

impl std::fmt::Debug for WriteSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WriteSlot")
    }
}

/// Two events are equal by what they say, never by who waits for them.
impl PartialEq for WriteSlot {
    fn eq(&self, _: &WriteSlot) -> bool {
        true
    }
}

/// The publisher's side: resolves once the audit log has the event, or cannot have it.
#[derive(Debug)]
pub struct Written(oneshot::Receiver<Outcome>);

/// Why an event is not in the audit log.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotWritten {
    /// Appending it failed (the disk is full, the file went away): the error, with its causes.
    #[error("the audit log could not be written: {0}")]
    Failed(String),
    /// The audit sink never got it (its queue was full, or it was stopped).
    #[error("the event never reached the audit log (its queue was full or it stopped)")]
    Lost,
    /// The audit sink did not report within the time given.
    #[error("the audit log did not confirm the event within {0:?}")]
    TooSlow(Duration),
}

impl Written {
    /// Waits until the audit log has the event, at most `within`.
    pub async fn wait(self, within: Duration) -> Result<(), NotWritten> {
        match tokio::time::timeout(within, self.0).await {
            Ok(Ok(Ok(()))) => Ok(()),
            Ok(Ok(Err(error))) => Err(NotWritten::Failed(error)),
            Ok(Err(_)) => Err(NotWritten::Lost),
            Err(_) => Err(NotWritten::TooSlow(within)),
        }
    }
}

/// A slot and its wait.
pub(crate) fn pair() -> (WriteSlot, Written) {
    let (sender, receiver) = oneshot::channel();
    (WriteSlot(Arc::new(Mutex::new(Some(sender)))), Written(receiver))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_first_report_counts() {
        let (slot, written) = pair();
        slot.report(Ok(()));
        let error = crate::AuditError::Io {
            path: "/x".into(),
            action: "append to",
            source: std::io::Error::other("disk full"),
        };
        slot.report(Err(&error));
        assert_eq!(written.wait(Duration::from_secs(1)).await, Ok(()));
    }

    #[tokio::test]
    async fn a_failure_says_why() {
        let (slot, written) = pair();
        let error = crate::AuditError::Io {
            path: "/var/log/toolgate/audit.jsonl".into(),
            action: "append to",
            source: std::io::Error::other("No space left on device"),
        };
        slot.report(Err(&error));
        let Err(NotWritten::Failed(why)) = written.wait(Duration::from_secs(1)).await else {
            panic!("a failure")
        };
        assert!(why.contains("audit.jsonl") && why.contains("No space left"), "{why}");
    }

    #[tokio::test]
    async fn an_event_nobody_writes_is_lost_at_once() {
        let (slot, written) = pair();
        let copy = slot.clone();
        drop((slot, copy));
        assert_eq!(written.wait(Duration::from_secs(60)).await, Err(NotWritten::Lost));
    }

    #[tokio::test(start_paused = true)]
    async fn a_sink_that_does_not_answer_is_too_slow() {
        let (_slot, written) = pair();
        let within = Duration::from_secs(5);
        assert_eq!(written.wait(within).await, Err(NotWritten::TooSlow(within)));
    }
}
