//! The supervisor's reconnection delays.

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
