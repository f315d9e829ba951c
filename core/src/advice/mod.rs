//! Turning measurements into settings and placements (`storlab.recommend()`),
//! pure: each topic's decider takes plain figures (structs of numbers and
//! names, [`figures`]) and returns its row of advice. `ops::advice` in the
//! extension reads the figures (storlab's tables, the catalog) as the
//! caller; `api::advice` returns the rows.
//!
//! - `costs`: seq_page_cost, random_page_cost, effective_io_concurrency per tablespace
//! - `wal`: where pg_wal should be (never volatile storage, never its own volume)
//! - `placement`: where indexes and temp files should be: an experiment that
//!   won significantly, else repeated probes that differ significantly
//!   between the current tablespace and one on another volume
//! - `fillfactor`: a fillfactor that beat the highest one significantly
//! - `read_path` (PostgreSQL 18): effective_io_concurrency from PostgreSQL's
//!   own read path, and whether another io_method reads significantly faster
//!
//! A topic without evidence says what to measure first, and the call that
//! measures it.

pub mod costs;
pub mod figures;
pub mod fillfactor;
pub mod placement;
pub mod read_path;
pub mod wal;

pub use costs::{
    costs, eic_from_sweep, miss_ratio, seq_page_us, Costs, EicPick, EicShort, DEFAULT_MISS,
    MIN_BLOCKS_FOR_RATIO,
};
pub use figures::{
    ByTablespace, Cell, ConcurrencyBasis, Context, Experiment, Figures, Probe, Sweep, SweepPoint,
};
pub use wal::worth_moving;

use serde_json::{json, Value};

/// One row of `storlab.recommend()`.
#[derive(Debug, Clone, PartialEq)]
pub struct Advice {
    pub topic: String,
    pub target: Option<String>,
    pub advice: String,
    pub statement: Option<String>,
    pub expected_gain: Option<String>,
    pub evidence: Value,
}

impl Advice {
    pub fn new(
        topic: &str,
        target: Option<&str>,
        advice: String,
        statement: Option<String>,
        expected_gain: Option<String>,
        evidence: Value,
    ) -> Advice {
        Advice {
            topic: topic.to_string(),
            target: target.map(str::to_string),
            advice,
            statement,
            expected_gain,
            evidence,
        }
    }

    /// Nothing to go by yet: what to measure, and the call that measures it.
    pub fn measure_first(topic: &str, what: &str, call: &str) -> Advice {
        Advice::new(
            topic,
            None,
            format!("nothing measured yet: {what}; measure first"),
            Some(call.to_string()),
            None,
            json!({}),
        )
    }
}

/// The call that measures every tablespace and pg_wal with the standard
/// suite (only missing or day-old figures).
pub const COMPARE_CALL: &str = "SELECT * FROM storlab.compare_tablespaces()";

/// Every topic's advice, in the order recommend() returns them: costs per
/// tablespace, wal, indexes, temp, fillfactor, and on PostgreSQL 18 io_method.
pub fn recommend(figures: &ByTablespace, experiments: &[Experiment], ctx: &Context) -> Vec<Advice> {
    let mut rows = costs::advise(
        figures,
        ctx.blks_read,
        ctx.blks_hit,
        ctx.aio.as_ref().map(|a| a.io_method.as_str()),
    );
    rows.push(wal::advise(figures));
    rows.push(placement::advise(
        placement::Purpose::Indexes,
        figures,
        experiments,
        ctx,
    ));
    rows.push(placement::advise(
        placement::Purpose::Temp,
        figures,
        experiments,
        ctx,
    ));
    rows.push(fillfactor::advise(experiments, ctx));
    if let Some(aio) = &ctx.aio {
        rows.push(read_path::advise_io_method(figures, aio));
    }
    rows
}

/// A change in percent as the advice writes it, "unknown" when it is.
pub(crate) fn percent(change: Option<f64>) -> String {
    change.map_or("unknown".into(), |x| format!("{x:+.0} %"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_nothing_stored_every_topic_says_what_to_measure() {
        let rows = recommend(&ByTablespace::new(), &[], &Context::default());
        let topics: Vec<&str> = rows.iter().map(|r| r.topic.as_str()).collect();
        assert_eq!(topics, ["costs", "wal", "indexes", "temp", "fillfactor"]);
        for r in &rows {
            assert!(
                r.advice.starts_with("nothing measured yet: "),
                "{}: {}",
                r.topic,
                r.advice
            );
            assert!(r.statement.is_some() && r.target.is_none(), "{}", r.topic);
        }
    }

    #[test]
    fn literals_and_percentages() {
        assert_eq!(percent(Some(12.4)), "+12 %");
        assert_eq!(percent(Some(-3.6)), "-4 %");
        assert_eq!(percent(None), "unknown");
    }
}
