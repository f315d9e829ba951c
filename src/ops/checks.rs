//! Storage checks for CI: a check of one figure against a threshold, a
//! labelled baseline of the standard suite, and the regressions of today's
//! figures against it. The verdicts are in `report::checks` (pure); this
//! measures, stores and reads.

use std::time::Duration;

use pgrx::datum::DatumWithOid;
use pgrx::prelude::*;

use super::error::{spi, Error, OrRaise, Raise, SqlState};
use super::identity::{self, as_owner};
use super::read;
use super::server::{hostname, system_identifier, this_server};
use super::standby;
use super::suite::{item_args, measure_item, suite_file_once, SuiteRun, ITEM_PROBES};
use super::targets::{all_targets, check_may_write_all, resolve, Target};
use crate::sqltypes::Name;
use storlab_core::report::checks::{confirm, judge, Verdict};
use storlab_core::request::checks::Metric;
use storlab_core::request::probe::{SuiteItem, SUITE, SUITE_PRECISION_PCT};

/// Standard-suite figures younger than this stand in for a new probe in a
/// check: a CI suite that checks several metrics of one workload probes once.
pub const CHECK_REUSE_SECS: i64 = 60;

fn run(duration: Duration, label: &'static str) -> SuiteRun<'static> {
    SuiteRun {
        duration,
        precision_pct: Some(SUITE_PRECISION_PCT),
        label,
        call: None,
    }
}

/// Ids of the newest standard-suite probes of `item` on `target` younger
/// than CHECK_REUSE_SECS, at most `n`.
/// Only probes the caller may read are reused (its own, or any when it
/// may read storlab.probes): the probe_ids a check returns are its
/// evidence, and its caller must be able to look them up.
fn young_probes(target: &Target, item: &SuiteItem, n: usize) -> Vec<i64> {
    let mut args = item_args(&target.name, item);
    args.push(this_server().into());
    args.push((CHECK_REUSE_SECS as f64).into());
    args.push((n as i64).into());
    args.push(standby::probes_arg());
    args.push(identity::caller().into());
    probe_ids(
        &format!(
            "SELECT id FROM {}
              WHERE {ITEM_PROBES} AND system_identifier = ANY($6)
                AND started_at > pg_catalog.now() - pg_catalog.make_interval(secs => $7)
                AND (pg_catalog.has_table_privilege($10, 'storlab.probes', 'SELECT')
                     OR EXISTS (SELECT FROM pg_catalog.pg_roles r
                                 WHERE r.rolname = measured_by AND pg_catalog.pg_has_role($10, r.oid, 'USAGE')))
              ORDER BY started_at DESC LIMIT $8",
            standby::probes_from(9)
        ),
        &args,
    )
}

/// The probe ids a query of one column of them returns, as the owner.
fn probe_ids(query: &str, args: &[DatumWithOid]) -> Vec<i64> {
    as_owner(|| {
        Spi::connect(|c| {
            c.select(query, None, args)?
                .map(|r| r.get::<i64>(1).map(|v| v.expect("id")))
                .collect::<Result<Vec<_>, _>>()
        })
        .map_err(spi("reading stored probes"))
        .or_raise()
    })
}

/// `repetitions` probes of `item` on `target`: young standard-suite ones
/// first, the rest measured now.
pub fn check_probes(
    target: &Target,
    item: &SuiteItem,
    duration: Duration,
    repetitions: usize,
) -> Vec<i64> {
    let mut ids = young_probes(target, item, repetitions);
    let file_size = suite_file_once(target, 1);
    while ids.len() < repetitions {
        ids.push(measure_item(target, item, 1, file_size, run(duration, "check")).or_raise());
    }
    ids.sort_unstable();
    ids
}

/// The values of one metric of probes measured by this server, in id order
/// (NULLs skipped): stored ones, or on a standby this session's.
pub fn metric_values(ids: &[i64], metric: Metric) -> Vec<f64> {
    metric_values_of(&standby::probes_from(3), None, ids, metric)
}

/// The values of one metric of the probes `ids` of `table` (storlab.probes,
/// a standby's unstored probes given as `$3`, or a fleet server's copies of
/// `node` in storlab.fleet_probes), in id order (NULLs skipped).
fn metric_values_of(
    table: &str,
    node: Option<pgrx::datum::Uuid>,
    ids: &[i64],
    metric: Metric,
) -> Vec<f64> {
    as_owner(|| {
        Spi::connect(|c| {
            c.select(
                &format!(
                    "SELECT {} FROM {table} WHERE id = ANY($1) AND ($2::uuid IS NULL OR node_id = $2) ORDER BY id",
                    metric.as_str()
                ),
                None,
                &[ids.to_vec().into(), node.into(), standby::probes_arg()],
            )?
            .map(|r| r.get::<f64>(1))
            .filter_map(|v| v.transpose())
            .collect::<Result<Vec<_>, _>>()
        })
        .map_err(spi("reading stored probes"))
        .or_raise()
    })
}

/// The standard suite `repetitions` times on `targets`, repetition after
/// repetition (so that a drift over the run spreads over every tablespace
/// alike).
fn suite_repetitions(targets: &[Target], repetitions: usize, run: SuiteRun) -> Vec<Measured> {
    // every target writable and there, before the first probe
    check_may_write_all(targets).or_raise();
    let sizes: Vec<u64> = targets.iter().map(|t| suite_file_once(t, 1)).collect();
    let mut out = Vec::new();
    for repetition in 1..=repetitions {
        for (target, (t, size)) in targets.iter().zip(&sizes).enumerate() {
            for (item, i) in SUITE.iter().enumerate() {
                let id = measure_item(t, i, 1, *size, run).or_raise();
                out.push(Measured {
                    repetition,
                    target,
                    item,
                    id,
                });
            }
        }
    }
    out
}

/// One probe of a suite repetition: which repetition, target and item (by
/// index) it measured.
struct Measured {
    repetition: usize,
    target: usize,
    item: usize,
    id: i64,
}

fn baseline_id(label: &str) -> Option<i64> {
    as_owner(|| {
        read::one::<i64>(
            "SELECT (SELECT id FROM storlab.baselines WHERE label = $1)",
            &[label.into()],
        )
        .map_err(spi("reading the baselines"))
        .or_raise()
    })
}

/// The targets a baseline is taken on: every tablespace and pg_wal, or
/// the ones named (each must exist).
pub fn targets_of(names: Option<Vec<Option<Name>>>) -> Vec<Target> {
    match names {
        None => all_targets(),
        Some(names) => {
            if names.is_empty() {
                Error::new(
                    SqlState::InvalidParameterValue,
                    "tablespaces must name at least one tablespace, or be NULL for all of them",
                )
                .raise();
            }
            let mut out: Vec<Target> = Vec::new();
            for n in names {
                let Some(n) = n else {
                    Error::new(
                        SqlState::NullValueNotAllowed,
                        "tablespaces must not contain NULL",
                    )
                    .raise()
                };
                let t = resolve(n.as_str()).or_raise();
                if !out.iter().any(|o| o.name == t.name) {
                    out.push(t);
                }
            }
            out
        }
    }
}

/// Runs and stores a labelled baseline; its id.
pub fn take_baseline(
    label: &str,
    targets: &[Target],
    duration: Duration,
    repetitions: usize,
) -> i64 {
    let names: Vec<Name> = targets.iter().map(|t| Name(t.name.clone())).collect();
    let caller = identity::caller();
    // One statement claims the label: a second session taking the same one
    // waits for the first (like any unique key, within lock_timeout) and
    // finds it taken when the first commits, rather than a unique violation.
    let id = as_owner(|| {
        Spi::get_one_with_args::<i64>(
            "WITH taken AS (
               INSERT INTO storlab.baselines (label, tablespaces, duration_s, repetitions, system_identifier, hostname, taken_by)
               VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (label) DO NOTHING RETURNING id)
             SELECT (SELECT id FROM taken)",
            &[
                label.into(),
                names.into(),
                duration.as_secs_f64().into(),
                (repetitions as i32).into(),
                system_identifier().into(),
                hostname().into(),
                Name(caller).into(),
            ],
        )
        .map_err(spi("storing the baseline"))
        .or_raise()
    });
    let Some(id) = id else {
        // the way out the caller can take: drop its own, or another label
        let hint = match may_drop(label) {
            Ok(_) => format!(
                "Take it under another label, or drop the old one first: SELECT storlab.drop_baseline({})",
                storlab_core::sql_text::literal(label)
            ),
            Err(taken_by) => format!("Take yours under another label: it was taken by {taken_by}."),
        };
        Error::new(
            SqlState::DuplicateObject,
            format!("baseline \"{label}\" already exists"),
        )
        .with_hint(hint)
        .raise()
    };
    let probes = suite_repetitions(targets, repetitions, run(duration, "baseline"));
    let (reps, ids): (Vec<i32>, Vec<i64>) =
        probes.iter().map(|m| (m.repetition as i32, m.id)).unzip();
    as_owner(|| {
        Spi::run_with_args(
            "INSERT INTO storlab.baseline_probes (baseline_id, probe_id, repetition)
             SELECT $1, p, r FROM ROWS FROM (pg_catalog.unnest($2::int8[]), pg_catalog.unnest($3::int4[])) AS u(p, r)",
            &[id.into(), ids.into(), reps.into()],
        )
        .map_err(spi("storing the baseline's probes"))
        .or_raise()
    });
    id
}

/// May the caller drop baseline `label`: it took it (or has the privileges
/// of the role that did), or it may DELETE from storlab.baselines by hand.
/// Ok(the baseline's id, None for no such baseline); Err(who took it, as a
/// sentence's object) when it may not.
fn may_drop(label: &str) -> Result<Option<i64>, String> {
    let (id, taken_by) = as_owner(|| {
        read::two::<i64, String>(
            "SELECT b.id, b.taken_by::text FROM (SELECT) one LEFT JOIN storlab.baselines b ON b.label = $1",
            &[label.into()],
        )
        .map_err(spi("reading the baselines"))
        .or_raise()
    });
    let Some(id) = id else { return Ok(None) };
    let caller = identity::current_user();
    let by_hand = read::one::<bool>(
        "SELECT pg_catalog.has_table_privilege($1, 'storlab.baselines', 'DELETE')",
        &[caller.into()],
    )
    .map_err(spi("reading privileges"))
    .or_raise()
    .unwrap_or(false);
    let own = taken_by
        .as_deref()
        .and_then(identity::role_oid)
        .is_some_and(identity::has_privs_of);
    if by_hand || own {
        Ok(Some(id))
    } else {
        Err(match taken_by {
            Some(role) => format!("role \"{role}\""),
            None => "a release before 0.9.0, which did not record who took it".into(),
        })
    }
}

/// Drops baseline `label` (its links to its probes with it; the probes
/// stay, as a DELETE by hand leaves them), as the owner once the caller
/// may: the role that took it, or one that may DELETE from
/// storlab.baselines. Its id.
pub fn drop_baseline(label: &str) -> i64 {
    let id = match may_drop(label) {
        Ok(Some(id)) => id,
        Ok(None) => Error::new(SqlState::UndefinedObject, format!("baseline \"{label}\" does not exist"))
            .with_hint("storlab.own_baselines lists the baselines you took.")
            .raise(),
        Err(taken_by) => Error::new(
            SqlState::InsufficientPrivilege,
            format!("permission denied to drop baseline \"{label}\""),
        )
        .with_detail(format!(
            "It was taken by {taken_by}: only a role with that role's privileges, or one that may DELETE from storlab.baselines, may drop it."
        ))
        .raise(),
    };
    as_owner(|| {
        Spi::run_with_args("DELETE FROM storlab.baselines WHERE id = $1", &[id.into()])
            .map_err(spi("dropping the baseline"))
            .or_raise()
    });
    id
}

/// One row of regressions().
pub struct Regression {
    pub tablespace: String,
    pub item: SuiteItem,
    pub metric: Metric,
    pub verdict: Verdict,
    /// Index of the target and of the suite item, and the figures judged.
    target: usize,
    item_index: usize,
    baseline_values: Vec<f64>,
    values: Vec<f64>,
}

/// A baseline regressions() compares with: this database's own, or one
/// copied from a fleet server (sql/catalog/fleet.sql), whose probes are
/// keyed by its node too.
pub enum Baseline {
    Local(i64),
    Fleet { node: pgrx::datum::Uuid, id: i64 },
}

impl Baseline {
    /// The baseline's stored probe ids of one item on one tablespace.
    fn probes(&self, tablespace: &str, item: &SuiteItem) -> Vec<i64> {
        let mut args = item_args(tablespace, item);
        // from the baseline's few rows, not from the item's history
        let sql = match self {
            Baseline::Local(id) => {
                args.push((*id).into());
                format!(
                    "SELECT p.id FROM storlab.baseline_probes b JOIN storlab.probes p ON p.id = b.probe_id
                      WHERE b.baseline_id = $6 AND {ITEM_PROBES}
                      ORDER BY p.id"
                )
            }
            Baseline::Fleet { node, id } => {
                args.push((*id).into());
                args.push((*node).into());
                format!(
                    "SELECT p.id FROM storlab.fleet_baseline_probes b
                       JOIN storlab.fleet_probes p ON p.node_id = b.node_id AND p.id = b.probe_id
                      WHERE b.baseline_id = $6 AND b.node_id = $7 AND {ITEM_PROBES}
                      ORDER BY p.id"
                )
            }
        };
        probe_ids(&sql, &args)
    }

    /// One metric of the baseline's probes `ids`.
    fn values(&self, ids: &[i64], metric: Metric) -> Vec<f64> {
        match self {
            // the stored probes, also on a standby (where the figures
            // measured now are the session's own)
            Baseline::Local(_) => metric_values_of("storlab.probes", None, ids, metric),
            Baseline::Fleet { node, .. } => {
                metric_values_of("storlab.fleet_probes", Some(*node), ids, metric)
            }
        }
    }

    /// The tablespaces it was taken on.
    fn tablespaces(&self) -> Vec<String> {
        // read as the owner, as every other read of storlab's bookkeeping:
        // the caller may hold EXECUTE without SELECT on its tables
        as_owner(|| match self {
            Baseline::Local(id) => read::one::<Vec<Name>>(
                "SELECT tablespaces FROM storlab.baselines WHERE id = $1",
                &[(*id).into()],
            ),
            Baseline::Fleet { node, id } => read::one::<Vec<Name>>(
                "SELECT tablespaces FROM storlab.fleet_baselines WHERE node_id = $1 AND id = $2",
                &[(*node).into(), (*id).into()],
            ),
        })
        .map_err(spi("reading the baseline"))
        .or_raise()
        .unwrap_or_default()
        .into_iter()
        .map(|n| n.0)
        .collect()
    }
}

/// A fleet server's newest baseline of that label (labels are unique per
/// node: a server upgraded since may have two).
fn fleet_baseline(server: &str, label: &str) -> Baseline {
    super::fleet::check_servers(&[server.to_string()]);
    let found = as_owner(|| {
        read::two::<pgrx::datum::Uuid, i64>(
            "SELECT node_id, id FROM storlab.fleet_baselines WHERE server = $1 AND label = $2
              ORDER BY taken_at DESC LIMIT 1",
            &[server.into(), label.into()],
        )
    });
    let (node, id) = match found {
        Ok((Some(node), Some(id))) => (node, id),
        _ => Error::new(
            SqlState::UndefinedObject,
            format!("fleet server \"{server}\" has no baseline \"{label}\" in this collector"),
        )
        .with_hint("storlab.fleet_baselines lists the copied baselines; storlab.fleet_sync() copies new ones.")
        .raise(),
    };
    // A copy whose probes were deleted (by hand: the foreign key keeps a
    // probe a link refers to, not the links themselves) would compare
    // nothing and report no row, as if nothing regressed.
    let (links, missing) = as_owner(|| {
        read::two::<i64, i64>(
            "SELECT pg_catalog.count(*), pg_catalog.count(*) FILTER (WHERE NOT EXISTS (
                      SELECT FROM storlab.fleet_probes p WHERE p.node_id OPERATOR(pg_catalog.=) b.node_id
                                                           AND p.id OPERATOR(pg_catalog.=) b.probe_id))
               FROM storlab.fleet_baseline_probes b
              WHERE b.node_id OPERATOR(pg_catalog.=) $1 AND b.baseline_id OPERATOR(pg_catalog.=) $2",
            &[node.into(), id.into()],
        )
    })
    .map_err(spi("reading the baseline's probes"))
    .or_raise();
    let (links, missing) = (links.unwrap_or(0), missing.unwrap_or(0));
    if links == 0 || missing > 0 {
        Error::new(
            SqlState::ObjectNotInPrerequisiteState,
            format!(
                "the copy of baseline \"{label}\" of fleet server \"{server}\" has {} of its probes in this collector",
                if links == 0 || missing == links { "none".to_string() } else { format!("only {} of {links}", links - missing) }
            ),
        )
        .with_detail("Its probes or its links to them (storlab.fleet_baseline_probes) were deleted: there is nothing to compare this server with.")
        .with_hint("storlab.fleet_prune() deletes old copies and keeps what baselines use; take the baseline again on that server and sync.")
        .raise();
    }
    Baseline::Fleet { node, id }
}

/// The tablespaces to measure again and report: all of the baseline's, or
/// the named ones among them.
fn baseline_targets(
    baseline: &Baseline,
    label: &str,
    only: Option<Vec<Option<Name>>>,
) -> Vec<Target> {
    let taken = baseline.tablespaces();
    let report: Vec<String> = match only {
        None => taken.clone(),
        Some(names) => targets_of(Some(names))
            .into_iter()
            .map(|t| t.name)
            .collect(),
    };
    for name in &report {
        if !taken.contains(name) {
            Error::new(
                SqlState::InvalidParameterValue,
                format!("baseline \"{label}\" has no figures of {name}"),
            )
            .with_detail(format!("It was taken on {}.", taken.join(", ")))
            .raise();
        }
    }
    // Only those reported are measured: the others' figures would be
    // thrown away (a baseline of every tablespace checked on one took twice
    // as long). Another server's must exist here by name (that server may
    // have had tablespaces this one has not).
    taken
        .iter()
        .filter(|t| report.contains(t))
        .map(|t| {
            resolve(t)
                .map_err(|e| match baseline {
                    Baseline::Fleet { .. } => e.with_hint(
                        "Another server's baseline is checked on this server's tablespaces of the same names: name those to check with tablespaces => ...",
                    ),
                    Baseline::Local(_) => e,
                })
                .or_raise()
        })
        .collect()
}

/// Measures the baseline's tablespaces again and judges every figure: a
/// baseline of this database, or (`server`) one copied from a fleet
/// server, which this server's figures are then checked against.
pub fn regressions(
    label: &str,
    only: Option<Vec<Option<Name>>>,
    max_change_pct: f64,
    duration: Duration,
    repetitions: usize,
    server: Option<&str>,
) -> Vec<Regression> {
    let baseline = match server {
        Some(server) => fleet_baseline(server, label),
        None => match baseline_id(label) {
            Some(id) => Baseline::Local(id),
            None => Error::new(SqlState::UndefinedObject, format!("baseline \"{label}\" does not exist"))
                .with_hint("Take one with storlab.baseline(label) on known-good storage; storlab.own_baselines lists those you took (storlab.baselines, every one).")
                .raise(),
        },
    };
    match &baseline {
        Baseline::Local(id) => {
            let (taken_on, host) = as_owner(|| {
                read::two::<i64, String>(
                    "SELECT system_identifier, hostname FROM storlab.baselines WHERE id = $1",
                    &[(*id).into()],
                )
                .map_err(spi("reading the baseline"))
                .or_raise()
            });
            if !taken_on.is_some_and(|id| this_server().contains(&id)) {
                // a restored dump: legitimate (a new volume against known-good
                // figures from elsewhere), but the reader should know
                notice!(
                    "storlab: baseline \"{label}\" was taken on another server ({}): the comparison is between machines",
                    host.unwrap_or_default()
                );
            }
        }
        Baseline::Fleet { .. } => notice!(
            "storlab: baseline \"{label}\" of fleet server \"{}\": this server's figures are checked against another server's",
            server.unwrap_or_default()
        ),
    }
    // The tablespaces asked for are measured again in the baseline's
    // interleaved order, repetition after repetition over all of them.
    let targets = baseline_targets(&baseline, label, only);
    let run = run(duration, "regressions");
    let first = suite_repetitions(&targets, repetitions, run);
    let mut out = judge_round(&baseline, &targets, &first, max_change_pct);
    // A figure flagged once is measured again, in the same conditions:
    // only one flagged in both rounds is a regression (see
    // report::checks::confirm).
    // `out` runs tablespace by tablespace: dedup leaves each name once
    let mut flagged: Vec<&str> = out
        .iter()
        .filter(|r| r.verdict.is_regression())
        .map(|r| r.tablespace.as_str())
        .collect();
    flagged.dedup();
    if !flagged.is_empty() {
        notice!(
            "storlab: figures of {} look worse than baseline \"{label}\": measuring again, since a regression must show in two rounds",
            flagged.join(", ")
        );
        let second = suite_repetitions(&targets, repetitions, run);
        for r in out.iter_mut().filter(|r| r.verdict.is_regression()) {
            let later = metric_values(&round_ids(&second, r.target, r.item_index), r.metric);
            if !later.is_empty() {
                r.verdict = confirm(
                    r.metric,
                    &r.baseline_values,
                    &r.values,
                    &later,
                    max_change_pct,
                );
            }
        }
    }
    out
}

/// The probe ids of one target and item in a round.
fn round_ids(round: &[Measured], target: usize, item: usize) -> Vec<i64> {
    round
        .iter()
        .filter(|m| m.target == target && m.item == item)
        .map(|m| m.id)
        .collect()
}

/// Every figure of one round against the baseline.
fn judge_round(
    baseline: &Baseline,
    targets: &[Target],
    round: &[Measured],
    max_change_pct: f64,
) -> Vec<Regression> {
    let mut out = Vec::new();
    for (ti, target) in targets.iter().enumerate() {
        for (ii, item) in SUITE.iter().enumerate() {
            let before = baseline.probes(&target.name, item);
            let after = round_ids(round, ti, ii);
            if before.is_empty() || after.is_empty() {
                continue;
            }
            for &metric in Metric::compared_for(item.workload, item.block_size) {
                let (b, a) = (
                    baseline.values(&before, metric),
                    metric_values(&after, metric),
                );
                if b.is_empty() || a.is_empty() {
                    continue;
                }
                out.push(Regression {
                    tablespace: target.name.clone(),
                    target: ti,
                    item: *item,
                    item_index: ii,
                    metric,
                    verdict: judge(metric, &b, &a, max_change_pct),
                    baseline_values: b,
                    values: a,
                });
            }
        }
    }
    out
}
