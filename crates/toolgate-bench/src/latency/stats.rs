//! Per-call samples of one cell (path × payload × concurrency), gathered over the rounds,
//! and what is reported from them.

use std::time::Duration;

/// What one cell measured, summed over its rounds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Samples {
    /// Every measured call's duration, in nanoseconds.
    calls_ns: Vec<u64>,
    /// Wall time of the measured parts (first call sent to last answer received).
    pub(crate) wall: Duration,
    /// CPU time of the load generator during the measured parts.
    pub(crate) client_cpu: Duration,
    /// CPU time of the processes serving the path during the measured parts.
    pub(crate) server_cpu: Duration,
    /// CPU time of the gateway's own processes, without their descendants, during the
    /// measured parts; `None` on direct paths.
    pub(crate) gateway_cpu: Option<Duration>,
}

impl Samples {
    /// Adds one round's calls and times.
    pub(crate) fn add(
        &mut self,
        calls: impl IntoIterator<Item = Duration>,
        wall: Duration,
        client_cpu: Duration,
        server_cpu: Duration,
        gateway_cpu: Option<Duration>,
    ) {
        self.calls_ns
            .extend(calls.into_iter().map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)));
        self.wall += wall;
        self.client_cpu += client_cpu;
        self.server_cpu += server_cpu;
        if let Some(gateway_cpu) = gateway_cpu {
            *self.gateway_cpu.get_or_insert_default() += gateway_cpu;
        }
    }

    /// The summary; `None` without any call.
    pub(crate) fn summary(&self) -> Option<Summary> {
        if self.calls_ns.is_empty() {
            return None;
        }
        let mut sorted = self.calls_ns.clone();
        sorted.sort_unstable();
        let calls = sorted.len();
        let ms = |ns: u64| ns as f64 / 1e6;
        let per_call_us = |d: Duration| d.as_secs_f64() * 1e6 / calls as f64;
        Some(Summary {
            calls,
            p50_ms: ms(percentile(&sorted, 50.0)),
            p90_ms: ms(percentile(&sorted, 90.0)),
            p99_ms: ms(percentile(&sorted, 99.0)),
            max_ms: ms(sorted[calls - 1]),
            mean_ms: ms(sorted.iter().sum::<u64>() / calls as u64),
            wall_s: self.wall.as_secs_f64(),
            calls_per_s: if self.wall.is_zero() {
                0.0
            } else {
                calls as f64 / self.wall.as_secs_f64()
            },
            client_cpu_ms: self.client_cpu.as_secs_f64() * 1e3,
            server_cpu_ms: self.server_cpu.as_secs_f64() * 1e3,
            client_cpu_us_per_call: per_call_us(self.client_cpu),
            server_cpu_us_per_call: per_call_us(self.server_cpu),
            gateway_cpu_ms: self.gateway_cpu.map(|cpu| cpu.as_secs_f64() * 1e3),
            gateway_cpu_us_per_call: self.gateway_cpu.map(per_call_us),
        })
    }
}

/// The numbers reported for a cell.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Summary {
    pub(crate) calls: usize,
    pub(crate) p50_ms: f64,
    pub(crate) p90_ms: f64,
    pub(crate) p99_ms: f64,
    pub(crate) max_ms: f64,
    pub(crate) mean_ms: f64,
    pub(crate) wall_s: f64,
    pub(crate) calls_per_s: f64,
    pub(crate) client_cpu_ms: f64,
    pub(crate) server_cpu_ms: f64,
    pub(crate) client_cpu_us_per_call: f64,
    pub(crate) server_cpu_us_per_call: f64,
    /// Absent on direct paths (no gateway); see the report's `legend`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gateway_cpu_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) gateway_cpu_us_per_call: Option<f64>,
}

/// The nearest-rank percentile `p` (0 < p <= 100) of sorted, non-empty samples.
pub(crate) fn percentile(sorted: &[u64], p: f64) -> u64 {
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// A small deterministic random number generator (SplitMix64), for shuffling the order of
/// cells in each round.
#[derive(Debug, Clone)]
pub(crate) struct Shuffler(u64);

impl Shuffler {
    pub(crate) fn new(seed: u64) -> Self {
        Shuffler(seed)
    }

    /// The seed given, else one from the clock (the report prints it, so a run can be
    /// repeated in the same order).
    pub(crate) fn seed_or_clock(given: Option<u64>) -> u64 {
        given.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs())
        })
    }

    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Fisher-Yates.
    pub(crate) fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let sorted: Vec<u64> = (1..=100).collect();
        assert_eq!(percentile(&sorted, 50.0), 50);
        assert_eq!(percentile(&sorted, 90.0), 90);
        assert_eq!(percentile(&sorted, 99.0), 99);
        assert_eq!(percentile(&sorted, 100.0), 100);
        assert_eq!(percentile(&[7], 50.0), 7);
        assert_eq!(percentile(&[1, 2], 50.0), 1);
        assert_eq!(percentile(&[1, 2], 99.0), 2);
    }

    #[test]
    fn a_summary_of_rounds() {
        let mut samples = Samples::default();
        let ms = Duration::from_millis;
        samples.add([ms(1), ms(3)], ms(4), ms(2), ms(6), Some(ms(1)));
        samples.add([ms(2), ms(4)], ms(6), ms(2), ms(2), Some(ms(3)));
        let summary = samples.summary().expect("calls");
        assert_eq!(summary.calls, 4);
        assert_eq!(summary.p50_ms, 2.0);
        assert_eq!(summary.max_ms, 4.0);
        assert_eq!(summary.calls_per_s, 400.0);
        assert_eq!(summary.client_cpu_us_per_call, 1000.0);
        assert_eq!(summary.server_cpu_us_per_call, 2000.0);
        assert_eq!(summary.gateway_cpu_us_per_call, Some(1000.0));
        let mut direct = Samples::default();
        direct.add([ms(1)], ms(1), ms(1), ms(1), None);
        assert_eq!(direct.summary().expect("a call").gateway_cpu_us_per_call, None);
        assert!(Samples::default().summary().is_none());
    }

    #[test]
    fn shuffling_keeps_every_item() {
        let mut items: Vec<u32> = (0..50).collect();
        Shuffler::new(7).shuffle(&mut items);
        assert_ne!(items, (0..50).collect::<Vec<_>>(), "a shuffle moves things");
        items.sort_unstable();
        assert_eq!(items, (0..50).collect::<Vec<_>>());
    }
}
