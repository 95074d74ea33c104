//! Tests of supervision helpers: reconnection backoff and matching a server request to its call.

use super::*;

#[test]
fn backoff_grows_exponentially_with_jitter_and_a_cap() {
    for failures in 0..40 {
        for random in [0, 499, 999, u64::MAX] {
            let delay = backoff_delay(failures, random);
            let nominal = BACKOFF_BASE.saturating_mul(1u32 << failures.min(16)).min(BACKOFF_MAX);
            assert!(delay >= nominal / 2 && delay <= nominal, "{failures} {random}: {delay:?}");
        }
    }
    assert!(backoff_delay(0, 999) < backoff_delay(3, 0) * 2);
    assert!(backoff_delay(30, 999) <= BACKOFF_MAX);
}

#[test]
fn the_only_caller_is_found_only_when_unambiguous() {
    struct Nobody;
    impl Caller for Nobody {}
    let mut table = CallTable::default();
    assert!(table.only_caller().is_none());
    table.by_request.insert(mcp::NumberOrString::Number(1), Some(Arc::new(Nobody)));
    assert!(table.only_caller().is_some());
    table.by_request.insert(mcp::NumberOrString::Number(2), None);
    assert!(
        table.only_caller().is_some(),
        "toolgate's own requests (a re-listing) have no caller and do not count"
    );
    table.by_request.insert(mcp::NumberOrString::Number(3), Some(Arc::new(Nobody)));
    assert!(table.only_caller().is_none(), "two calls in flight: nobody can be sure");
}
