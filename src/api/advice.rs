//! `storlab.recommend()`: the settings and placements the stored
//! measurements support, each with the statement that applies it and the
//! evidence (probe ids, experiment ids, figures). Reads as the caller, like
//! chart_svg: `ops::advice` reads the figures, `storlab_core::advice`
//! decides. A topic without evidence says what to measure first, and the
//! call that measures it.

use pgrx::datum::JsonB;
use pgrx::prelude::*;

use crate::ops::advice;

#[pg_extern(stable)]
#[search_path(pg_catalog, pg_temp)]
fn recommend() -> TableIterator<
    'static,
    (
        name!(topic, String),
        name!(target, Option<String>),
        name!(advice, String),
        name!(statement, Option<String>),
        name!(expected_gain, Option<String>),
        name!(evidence, JsonB),
    ),
> {
    let _called = crate::ops::error::called("storlab.recommend");
    TableIterator::new(advice::recommend().into_iter().map(|a| {
        (
            a.topic,
            a.target,
            a.advice,
            a.statement,
            a.expected_gain,
            JsonB(a.evidence),
        )
    }))
}
