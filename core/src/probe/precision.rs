//! When a probe's answer is precise: throughput is sampled in short
//! intervals, and a probe asked for a precision stops once the 95 %
//! confidence interval of the mean IOPS is within ±precision % and its p99
//! has settled. fio runs for a fixed time and reports whatever it saw; on a
//! steady volume this stops sooner, on a noisy one it runs to its duration
//! and says how precise it got. Pure: the engine feeds it counts and times.

use std::time::Duration;

use crate::stats::summarize;

/// Length of one throughput sample. Short enough for five samples in the
/// minimum run, long enough to hold thousands of operations on any SSD and
/// a few hundred fsyncs on a disk.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(100);

/// No probe asked for a precision stops before this: the first tenths of a
/// second include ramp-up (queues filling, the device's caches warming).
pub const MIN_TIME: Duration = Duration::from_millis(500);

/// Operations needed before a p99 means anything: at least five samples
/// beyond it.
pub const MIN_OPS_FOR_P99: u64 = 500;

/// Largest and smallest precision accepted, in percent.
pub const MAX_PRECISION_PCT: f64 = 50.0;
pub const MIN_PRECISION_PCT: f64 = 0.1;

/// Half-width of the 95 % confidence interval of the mean of `samples`,
/// in percent of the mean (Student's t, n − 1 degrees of freedom); None
/// below two samples or for a mean of zero.
pub fn ci95_pct(samples: &[f64]) -> Option<f64> {
    let s = summarize(samples)?;
    let (low, high) = (s.ci95_low?, s.ci95_high?);
    (s.mean > 0.0).then(|| (high - low) / 2.0 / s.mean * 100.0)
}

/// Throughput samples of one probe, taken at SAMPLE_INTERVAL.
#[derive(Debug, Clone)]
pub struct Sampler {
    /// Asked precision in percent; None for a fixed-duration probe.
    target_pct: Option<f64>,
    /// Time (since the start) and operation count at the last sample.
    last_at: Duration,
    last_ops: u64,
    /// Operations per second in each full interval.
    iops: Vec<f64>,
    /// The p99 at the previous sample, to see whether it still moves.
    last_p99: Option<f64>,
    p99_settled: bool,
}

impl Sampler {
    pub fn new(target_pct: Option<f64>) -> Sampler {
        Sampler {
            target_pct,
            last_at: Duration::ZERO,
            last_ops: 0,
            iops: Vec::new(),
            last_p99: None,
            p99_settled: false,
        }
    }

    /// When the next sample is due (time since the start).
    pub fn next_due(&self) -> Duration {
        self.last_at + SAMPLE_INTERVAL
    }

    /// Whether a sample is due at `elapsed`.
    pub fn due(&self, elapsed: Duration) -> bool {
        elapsed >= self.next_due()
    }

    /// Whether the workers need to publish their latencies at all: only a
    /// probe asked for a precision reads a p99 while it runs, and a fixed
    /// one spares its workers the merge.
    pub fn wants_latencies(&self) -> bool {
        self.target_pct.is_some()
    }

    /// Whether the caller should read the p99 for this sample (reading it
    /// costs a merge of every worker's histogram).
    pub fn wants_p99(&self, ops: u64) -> bool {
        self.wants_latencies() && ops >= MIN_OPS_FOR_P99
    }

    /// Records the operation count at `elapsed` (and the p99, when asked).
    pub fn sample(&mut self, elapsed: Duration, ops: u64, p99: Option<f64>) {
        let secs = (elapsed - self.last_at).as_secs_f64();
        if secs > 0.0 {
            self.iops
                .push(ops.saturating_sub(self.last_ops) as f64 / secs);
        }
        self.last_at = elapsed;
        self.last_ops = ops;
        if let (Some(target), Some(now)) = (self.target_pct, p99) {
            self.p99_settled = match self.last_p99 {
                Some(before) if before > 0.0 => ((now - before) / before).abs() * 100.0 <= target,
                _ => false,
            };
            self.last_p99 = Some(now);
        }
    }

    /// Precision reached so far (see `ci95_pct`).
    pub fn ci95_pct(&self) -> Option<f64> {
        ci95_pct(&self.iops)
    }

    /// Whether a probe asked for a precision has it: never for a fixed one.
    pub fn precise(&self, elapsed: Duration) -> bool {
        let Some(target) = self.target_pct else {
            return false;
        };
        elapsed >= MIN_TIME && self.p99_settled && self.ci95_pct().is_some_and(|pct| pct <= target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn ci_matches_student_t() {
        // mean 100, s = 10, n = 5: t(0.975, 4) = 2.7764 → ±12.417 %
        let pct = ci95_pct(&[90.0, 110.0, 100.0, 87.75, 112.25]).unwrap();
        let s = summarize(&[90.0, 110.0, 100.0, 87.75, 112.25]).unwrap();
        let expect = 2.776_445 * s.stddev.unwrap() / 5f64.sqrt();
        assert!((pct - expect).abs() < 1e-3, "{pct} vs {expect}");
        assert_eq!(ci95_pct(&[5.0]), None);
        assert_eq!(ci95_pct(&[0.0, 0.0]), None);
    }

    /// Feeds `rate` ops per interval with p99 from `p99s`, returns when it
    /// said precise (in intervals), or None.
    fn run(target: Option<f64>, rates: &[u64], p99: impl Fn(usize) -> f64) -> Option<usize> {
        let mut s = Sampler::new(target);
        let mut ops = 0;
        for (i, r) in rates.iter().enumerate() {
            let at = SAMPLE_INTERVAL * (i as u32 + 1);
            assert!(s.due(at));
            ops += r;
            let p = s.wants_p99(ops).then(|| p99(i));
            s.sample(at, ops, p);
            if s.precise(at) {
                return Some(i + 1);
            }
        }
        None
    }

    #[test]
    fn a_steady_volume_stops_at_the_minimum_time() {
        let steady = vec![1000; 30];
        assert_eq!(run(Some(2.0), &steady, |_| 50.0), Some(5));
    }

    #[test]
    fn a_fixed_probe_never_stops_early() {
        assert!(!Sampler::new(None).wants_latencies());
        assert!(Sampler::new(Some(5.0)).wants_latencies());
        assert_eq!(run(None, &[1000; 30], |_| 50.0), None);
    }

    #[test]
    fn a_noisy_volume_runs_until_the_interval_is_narrow_enough() {
        // ±20 % alternating: the interval narrows as √n grows
        let noisy: Vec<u64> = (0..200)
            .map(|i| if i % 2 == 0 { 1200 } else { 800 })
            .collect();
        let n = run(Some(5.0), &noisy, |_| 50.0).expect("precise in the end");
        assert!(n > 10, "{n}");
        let got = ci95_pct(
            &noisy[..n]
                .iter()
                .map(|&x| x as f64 * 10.0)
                .collect::<Vec<_>>(),
        );
        assert!(got.unwrap() <= 5.0);
        assert_eq!(run(Some(1.0), &noisy[..20], |_| 50.0), None);
    }

    #[test]
    fn a_p99_that_still_moves_keeps_the_probe_running() {
        let steady = vec![1000; 30];
        // p99 grows 10 % per sample until sample 12, then holds
        let moving = |i: usize| 50.0 * 1.1f64.powi(i.min(12) as i32);
        assert_eq!(run(Some(2.0), &steady, moving), Some(14));
    }

    #[test]
    fn too_few_operations_for_a_p99_never_stop_early() {
        // 40 ops per 100 ms (a slow fsync): 500 ops only after 13 samples
        let slow = vec![40; 30];
        assert_eq!(run(Some(5.0), &slow, |_| 25_000.0), Some(14));
    }

    #[test]
    fn sampling_is_due_every_interval() {
        let mut s = Sampler::new(None);
        assert!(!s.due(ms(99)));
        assert!(s.due(ms(100)));
        s.sample(ms(104), 10, None);
        assert!(!s.due(ms(203)));
        assert!(s.due(ms(204)));
        assert_eq!(s.next_due(), ms(204));
        assert_eq!(s.ci95_pct(), None);
    }
}
