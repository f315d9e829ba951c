//! `storlab.chart_svg()`: a standalone SVG chart of stored results. Reads
//! as the caller (SELECT on storlab's tables, granted to pg_monitor), as a
//! query by hand would (`ops::chart`); shapes and draws with
//! `storlab_core::chart`.

use pgrx::prelude::*;

use crate::ops::chart as stored;
use crate::ops::error::{invalid, required, Error, OrRaise, Raise, SqlState};
use storlab_core::chart::{self, data};

/// The kinds, and whether each takes an id.
const KINDS: [(&str, bool); 7] = [
    ("experiment", true),
    ("run", true),
    ("probe", true),
    ("profile", false),
    ("depths", false),
    ("tablespaces", false),
    ("fleet", false),
];

#[pg_extern(stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn chart_svg(
    kind: Option<String>,
    id: default!(Option<i64>, "NULL"),
    title: default!(Option<String>, "NULL"),
) -> String {
    let _called = crate::ops::error::called("storlab.chart_svg");
    let kind = required(kind, "kind");
    let Some(&(kind, takes_id)) = KINDS.iter().find(|(k, _)| *k == kind) else {
        let known: Vec<&str> = KINDS.iter().map(|(k, _)| *k).collect();
        invalid(format!("unknown chart kind \"{kind}\""))
            .with_hint(format!("Kinds: {}.", known.join(", ")))
            .raise()
    };
    let id = match (takes_id, id) {
        (true, None) => required(None, &format!("id (the {kind}'s id)")),
        (false, Some(_)) => invalid(format!(
            "a {kind} chart takes no id: it draws the newest standard-suite probes"
        ))
        .raise(),
        (_, id) => id.unwrap_or(0),
    };
    let drawn = match kind {
        "experiment" => {
            let (name, bars) = stored::experiment(id);
            chart::experiment(
                &title.unwrap_or_else(|| data::experiment_title(id, &name)),
                &bars,
            )
        }
        "run" => {
            let (head, points) = stored::run(id);
            chart::run(&title.unwrap_or_else(|| data::run_title(&head)), &points)
        }
        "probe" => {
            let (head, values) = stored::probe(id, &data::PERCENTILES);
            chart::percentiles(
                &title.unwrap_or_else(|| data::probe_title(&head)),
                &[data::percentile_series(
                    &head.workload,
                    &data::PERCENTILES,
                    &values,
                )],
            )
        }
        "profile" => chart::profile(
            title.as_deref().unwrap_or(data::PROFILE_TITLE),
            &data::curves(&stored::by_workers(), data::PROFILE_MORE_THAN),
        ),
        "depths" => chart::depths(
            title.as_deref().unwrap_or(data::DEPTHS_TITLE),
            &data::curves(&stored::by_depth(), data::DEPTHS_MORE_THAN),
        ),
        "fleet" => chart::tablespaces(
            title.as_deref().unwrap_or(data::FLEET_TITLE),
            &data::tablespace_figures(&stored::fleet_suite_figures()),
        ),
        _ => chart::tablespaces(
            title.as_deref().unwrap_or(data::TABLESPACES_TITLE),
            &data::tablespace_figures(&stored::suite_figures()),
        ),
    };
    // stored rows that hold nothing to draw (a run without progress, no
    // suite yet): an error, not an empty picture
    drawn
        .map_err(|e| Error::new(SqlState::ObjectNotInPrerequisiteState, e.0))
        .or_raise()
}
