//! Exponential backoff with jitter, for anything that retries (upstream reconnection, webhook
//! deliveries).

use std::time::Duration;

/// The wait before retry number `attempt` (0 = the first retry): `base` doubled per attempt,
/// capped at `max`, then scaled to 50–100% by `random` so that many retriers spread out.
pub fn delay(attempt: u32, base: Duration, max: Duration, random: u64) -> Duration {
    let exponential = base.saturating_mul(1u32 << attempt.min(31));
    let capped = exponential.min(max);
    let jitter = 0.5 + (random % 1001) as f64 / 2000.0;
    capped.mul_f64(jitter)
}

/// A random number good enough for jitter (not for secrets).
pub fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    std::collections::hash_map::RandomState::new().build_hasher().finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_caps_and_jitters_between_half_and_all() {
        let (base, max) = (Duration::from_millis(100), Duration::from_secs(5));
        assert_eq!(delay(0, base, max, 1000), base);
        assert_eq!(delay(0, base, max, 0), base / 2);
        assert_eq!(delay(3, base, max, 1000), base * 8);
        assert_eq!(delay(40, base, max, 1000), max);
        for random in [0, 7, 500, 1000, u64::MAX] {
            let d = delay(2, base, max, random);
            assert!(d >= base * 2 && d <= base * 4, "{random}: {d:?}");
        }
    }
}
