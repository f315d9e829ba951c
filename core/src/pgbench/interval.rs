//! One row of a run's timeline, whichever log it was computed from.

/// Transactions that finished in one interval of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct IntervalRow {
    /// Seconds from the start of the first interval to the start of this one.
    pub t_s: u64,
    /// Length of the interval in seconds.
    pub interval_s: u64,
    /// False for a row the run covers only in part (the first and last
    /// second of a timeline built from the transaction log, the first
    /// interval of the aggregated log): its tps understates the rate, so
    /// statistics over rows should leave it out.
    pub complete: bool,
    /// Transactions that succeeded (pgbench counts neither failed nor
    /// skipped ones as processed).
    pub transactions: u64,
    /// Successful transactions per second over the interval.
    pub tps: f64,
    /// `None` when no transaction succeeded in the interval: an idle second
    /// has no latency, and 0 would read as an infinitely fast one.
    pub lat_avg_ms: Option<f64>,
    pub lat_max_ms: Option<f64>,
    /// Transactions that ended in a serialization failure or deadlock.
    pub failures: u64,
    /// Transactions skipped because they were already late (`--rate` with
    /// `--latency-limit`).
    pub skipped: u64,
}

/// The latency fields of a row from a count, a sum and a max in µs.
pub(crate) fn latency_ms(
    transactions: u64,
    sum_us: f64,
    max_us: f64,
) -> (Option<f64>, Option<f64>) {
    if transactions == 0 {
        return (None, None);
    }
    (
        Some(sum_us / transactions as f64 / 1_000.0),
        Some(max_us / 1_000.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_interval_has_no_latency() {
        assert_eq!(latency_ms(0, 0.0, 0.0), (None, None));
        assert_eq!(latency_ms(4, 10_000.0, 4_000.0), (Some(2.5), Some(4.0)));
    }
}
