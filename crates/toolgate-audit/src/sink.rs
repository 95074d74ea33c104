//! Sinks: tasks that take events off the bus and put them somewhere.
//!
//! Each sink is one subscription ([`SINK_CAPACITY`] events deep) and one task. A sink that falls
//! behind loses events at the bus (counted, see [`EventBus`]) instead of slowing anything down.

use tokio::task::JoinHandle;

use crate::bus::{EventBus, Subscription};
use crate::chain::AuditLog;
use crate::error::AuditError;
use crate::event::{Event, kind};
use crate::pattern::EventPattern;

/// How many events a sink's queue holds before the bus drops events for it.
pub const SINK_CAPACITY: usize = 4096;

/// At most this many events are written in one go.
const BATCH: usize = 256;

/// While events keep coming, the log is synced (`fsync`) at most this often; once they stop,
/// at most this long after the last one. An `fsync` per event costs more CPU than the rest of
/// a call through the gateway.
const SYNC_INTERVAL: std::time::Duration = std::time::Duration::from_millis(50);

/// Appends every event matching `pattern` to `log`, until every clone of `bus` is gone and the
/// queue is drained (await the handle after dropping the bus to be sure everything is written).
///
/// Events are written a batch of waiting ones at a time, from the sink's task: appending a line
/// is one `write` to the page cache, cheaper than handing it to a blocking-pool thread and back
/// (a profile of a stdio gateway showed that hand-off per event as a fifth of its CPU). Only
/// `fsync`, which waits for the disk, runs on the blocking pool, and `fsync`s are grouped (at
/// most one per 50 ms, and one 50 ms after the last event; one at the end).
///
/// Events lost before they were written (the queue was full, or a write failed) are recorded
/// as one [`kind::AUDIT_DROPPED`] record with their `count`. A write error is logged, naming the
/// file, and the sink carries on.
pub fn spawn_audit_sink(bus: &EventBus, pattern: EventPattern, log: AuditLog) -> JoinHandle<()> {
    let subscription = bus.subscribe(pattern, SINK_CAPACITY);
    tokio::spawn(run_audit_sink(subscription, log))
}

async fn run_audit_sink(mut subscription: Subscription, mut log: AuditLog) {
    let mut counted_drops = 0;
    let mut lost = 0;
    // Written but not yet synced since this instant (group commit: at most one `fsync` per
    // SYNC_INTERVAL while events keep coming, and one right after they stop).
    let mut unsynced_since: Option<tokio::time::Instant> = None;
    loop {
        let next = match unsynced_since {
            None => subscription.recv().await,
            Some(since) => tokio::select! {
                next = subscription.recv() => next,
                () = tokio::time::sleep_until(since + SYNC_INTERVAL) => {
                    let Some(synced) = sync(log).await else { return };
                    log = synced;
                    unsynced_since = None;
                    continue;
                }
            },
        };
        let Some(first) = next else { break };
        let mut batch = vec![first];
        batch.extend(std::iter::from_fn(|| subscription.try_recv()).take(BATCH - 1));
        let dropped = subscription.dropped();
        lost += dropped - counted_drops;
        counted_drops = dropped;

        let since = *unsynced_since.get_or_insert_with(tokio::time::Instant::now);
        let outcome = write_batch(&mut log, &batch, lost);
        lost = outcome.lost;
        if let Some(error) = outcome.first_error {
            tracing::error!(
                path = %log.path().display(),
                failed = outcome.failed,
                unrecorded = lost,
                error = %toolgate_core::ErrorChain(&error),
                "cannot write to the audit log; lost events are counted in the next \
                 `audit/dropped` record that can be written"
            );
        }
        if since.elapsed() >= SYNC_INTERVAL {
            let Some(synced) = sync(log).await else { return };
            log = synced;
            unsynced_since = None;
        }
    }
    if unsynced_since.is_some() {
        let _ = sync(log).await;
    }
}

/// Syncs `log` on the blocking pool and hands it back (a failed `fsync` is logged); `None` if
/// the blocking task itself failed (logged: no more events can be written to this file).
async fn sync(mut log: AuditLog) -> Option<AuditLog> {
    let path = log.path().to_path_buf();
    match tokio::task::spawn_blocking(move || (log.sync(), log)).await {
        Ok((outcome, log)) => {
            if let Err(error) = outcome {
                tracing::error!(path = %path.display(), error = %toolgate_core::ErrorChain(&error), "cannot sync the audit log");
            }
            Some(log)
        }
        Err(error) => {
            tracing::error!(path = %path.display(), error = %toolgate_core::ErrorChain(&error), "audit log writer failed; no more events will be recorded in this file");
            None
        }
    }
}

/// What writing one batch did.
struct BatchOutcome {
    /// How many events of the batch could not be written.
    failed: u64,
    /// The first error, from an event or the lost-events record.
    first_error: Option<AuditError>,
    /// Lost events not yet recorded as such.
    lost: u64,
}

/// Appends `batch`, then a record of the `lost` events (if any).
fn write_batch(log: &mut AuditLog, batch: &[Event], lost: u64) -> BatchOutcome {
    let mut outcome = BatchOutcome { failed: 0, first_error: None, lost };
    for event in batch {
        let appended = log.append(event);
        if let Some(slot) = &event.written {
            slot.report(appended.as_ref().map(|_| ()));
        }
        if let Err(error) = appended {
            outcome.failed += 1;
            outcome.lost += 1;
            outcome.first_error.get_or_insert(error);
        }
    }
    if outcome.lost > 0 {
        match log.append(&Event::new(kind::AUDIT_DROPPED).with("count", outcome.lost)) {
            Ok(()) => outcome.lost = 0,
            Err(error) => {
                outcome.first_error.get_or_insert(error);
            }
        }
    }
    outcome
}

/// Logs every event matching `pattern` at info level with target `toolgate::event`: the kind
/// as the message, the fields as one JSON object. Ends when every clone of `bus` is gone.
pub fn spawn_tracing_sink(bus: &EventBus, pattern: EventPattern) -> JoinHandle<()> {
    let mut subscription = bus.subscribe(pattern, SINK_CAPACITY);
    tokio::spawn(async move {
        while let Some(event) = subscription.recv().await {
            let fields = serde_json::Value::Object(event.fields);
            tracing::info!(target: "toolgate::event", fields = %fields, "{}", event.kind);
        }
    })
}

#[cfg(test)]
mod tests;
