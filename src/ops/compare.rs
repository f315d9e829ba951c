//! compare_tablespaces(): every tablespace and pg_wal side by side, one
//! answer per volume, each ranked figure with its interval and a role only
//! for a significant winner (storlab_core::report::{volumes, compare}).
//!
//! Tablespaces on one filesystem are one volume: it is measured once, under
//! the name of its first tablespace the caller may write to, and every
//! tablespace on it shows the same figures. The figures of a volume come
//! from one suite call: this call's repetitions, or the newest complete
//! call younger than max_age (every probe of a call carries its uuid,
//! storlab.probes.suite_call), never a mix of newest probes.

use std::os::unix::fs::MetadataExt;
use std::time::{Duration, Instant};

use pgrx::datum::{Interval, TimestampWithTimeZone};
use pgrx::prelude::*;

use super::error::{spi, Error, OrRaise, Raise, SqlState};
use super::identity::as_owner;
use super::read;
use super::server::this_server;
use super::standby;
use super::suite::{measure_item, suite_file_once, warn_skip, SuiteRun};
use super::targets::{all_targets, check_may_write_each, Target};
use super::time_bound::{check_time, fill_rate, seconds};
use storlab_core::env;
use storlab_core::record::{Probe, Record};
use storlab_core::report::compare::{rank, wanted, Ranking, Scores, Wanted};
use storlab_core::report::volumes::{
    complete, figures, item_of, items_for, most_time, probes_time, volumes, Rep, VolumeFigures,
};
use storlab_core::request::probe::SUITE;

/// How compare_tablespaces() measures and reads.
pub struct CompareArgs<'a> {
    pub max_age: Interval,
    pub run: SuiteRun<'a>,
    pub min_reps: usize,
    pub max_reps: usize,
    /// false: rank stored figures only (read-only, any role that may read)
    pub measure: bool,
    /// read the stored rows even on a standby (the primary's, replicated),
    /// where a comparison reads only this session's own measurements
    pub replicated: bool,
    /// refuse (54000) when statement_timeout is shorter than the most the
    /// measuring may take; measure_tablespaces(), which keeps each volume
    /// it finishes, measures on
    pub within_timeout: bool,
}

/// One output row: a target, its volume's figures and ranking.
pub struct Compared {
    pub target: Target,
    pub figures: VolumeFigures<TimestampWithTimeZone>,
    pub volatile: bool,
    pub ranking: Ranking,
    /// the first tablespace of its volume, when that is another
    pub same_volume_as: Option<String>,
    /// the suite call its figures come from
    pub call: Option<String>,
}

/// One volume: its targets (indexes into the call's targets, the first
/// first), their names, the one it is measured as, and what the ranking
/// needs of its storage (read once per call).
struct Volume {
    members: Vec<usize>,
    names: Vec<String>,
    measured_as: usize,
    volatile: bool,
    /// only pg_wal is on it
    wal_only: bool,
}

impl Volume {
    /// The ranking's view of figures measured on this volume.
    fn scores(&self, f: &VolumeFigures<TimestampWithTimeZone>) -> Scores {
        Scores {
            volatile: self.volatile,
            wal_only: self.wal_only,
            ..f.scores.clone()
        }
    }
}

/// The volumes of `targets` (by the device number of each folder).
fn volumes_of(targets: &[Target]) -> Vec<Volume> {
    let devices: Vec<Option<u64>> = targets
        .iter()
        .map(|t| std::fs::metadata(&t.folder).ok().map(|m| m.dev()))
        .collect();
    let first = volumes(&devices);
    let mut out: Vec<Volume> = Vec::new();
    for (i, &f) in first.iter().enumerate() {
        if f == i {
            out.push(Volume {
                members: vec![i],
                names: Vec::new(),
                measured_as: i,
                volatile: volatile(&targets[i]),
                wal_only: false,
            });
        } else if let Some(v) = out.iter_mut().find(|v| v.members[0] == f) {
            v.members.push(i);
        }
    }
    for v in &mut out {
        v.names = v.members.iter().map(|&i| targets[i].name.clone()).collect();
        v.wal_only = v.members.iter().all(|&i| targets[i].kind == "wal");
        // measured as its first tablespace the caller may write to
        if let Some(&i) = v
            .members
            .iter()
            .find(|&&i| targets[i].check_may_write().is_ok())
        {
            v.measured_as = i;
        }
    }
    out
}

/// The conditions every probe of a suite call meets (the predicate of the
/// index probes_suite_call), this server's, younger than max_age: $2 the
/// server's identifiers, $3 max_age.
const CALL_PROBES: &str = "suite = 'standard' AND ops > 0 AND suite_call IS NOT NULL
     AND system_identifier = ANY($2) AND started_at > pg_catalog.now() - $3";

/// How many calls, newest first, a volume's figures are looked for in: a
/// call cut short (cancelled, a probe failed) is passed over.
const CALLS_TRIED: usize = 10;

/// The newest complete suite call on a volume (`names`, its tablespaces)
/// younger than max_age, its repetitions in the order measured: each call
/// found by one index descent per tablespace, its rows through the index on
/// the call (on a standby, this session's own probes).
fn newest_call(
    names: &[String],
    max_age: &Interval,
    min_reps: usize,
    replicated: bool,
) -> Option<Vec<Rep<TimestampWithTimeZone>>> {
    let mut before: Option<TimestampWithTimeZone> = None;
    for _ in 0..CALLS_TRIED {
        let mut newest: Option<(String, TimestampWithTimeZone)> = None;
        for name in names {
            let probes = probes_read(replicated);
            let found = as_owner(|| {
                read::two::<String, TimestampWithTimeZone>(
                    &format!(
                        "SELECT suite_call::text, started_at FROM {probes}
                          WHERE tablespace = $1::name AND {CALL_PROBES} AND ($4::timestamptz IS NULL OR started_at < $4)
                          ORDER BY started_at DESC LIMIT 1"
                    ),
                    &[
                        name.clone().into(),
                        this_server().into(),
                        (*max_age).into(),
                        before.into(),
                        standby::probes_arg(),
                    ],
                )
            });
            if let Ok((Some(call), Some(at))) = found {
                if newest.as_ref().is_none_or(|(_, n)| at > *n) {
                    newest = Some((call, at));
                }
            }
        }
        let (call, _) = newest?;
        let reps = call_reps(names, max_age, &call, replicated);
        let of_call: Vec<_> = reps.iter().collect();
        if complete(&of_call, min_reps) {
            return Some(reps);
        }
        before = reps
            .iter()
            .map(|r| r.at)
            .reduce(|a, b| if b < a { b } else { a });
        before?;
    }
    None
}

/// The probes a reader reads as a FROM item with the session's unstored
/// ones as $5 (ops::standby): this server's own, or the stored rows.
fn probes_read(replicated: bool) -> String {
    if replicated {
        Probe::TABLE.to_string()
    } else {
        standby::probes_from(5)
    }
}

/// The repetitions of one suite call on a volume (`names`).
fn call_reps(
    names: &[String],
    max_age: &Interval,
    call: &str,
    replicated: bool,
) -> Vec<Rep<TimestampWithTimeZone>> {
    let probes = probes_read(replicated);
    let args = vec![
        names.to_vec().into(),
        this_server().into(),
        (*max_age).into(),
        call.to_string().into(),
        standby::probes_arg(),
    ];
    as_owner(|| {
        Spi::connect(|c| {
            let rows = c.select(
                &format!(
                    "SELECT suite_call::text, workload, block_size, sync_method,
                            workers, iodepth, lat_p50_us, lat_p99_us, iops, mib_s, started_at
                       FROM {probes}
                      WHERE suite_call = $4::uuid AND tablespace = ANY($1::name[]) AND {CALL_PROBES}
                      ORDER BY started_at, id"
                ),
                None,
                &args,
            )?;
            let mut out = Vec::new();
            for r in rows {
                let item = item_of(
                    &r.get::<String>(2)?.unwrap_or_default(),
                    r.get::<i32>(3)?.unwrap_or(0),
                    &r.get::<String>(4)?.unwrap_or_default(),
                    r.get::<i32>(5)?.unwrap_or(0),
                    r.get::<i32>(6)?.unwrap_or(0),
                );
                let Some(item) = item else { continue };
                out.push(Rep {
                    call: r.get::<String>(1)?.unwrap_or_default(),
                    item,
                    lat_p50_us: r.get(7)?,
                    lat_p99_us: r.get(8)?,
                    iops: r.get(9)?.unwrap_or(0.0),
                    mib_s: r.get(10)?.unwrap_or(0.0),
                    at: r.get(11)?.expect("started_at"),
                });
            }
            Ok::<_, pgrx::spi::Error>(out)
        })
        .map_err(spi("reading stored probes"))
        .or_raise()
    })
}

/// Every target with its volume's figures (measuring the volumes without a
/// complete suite call younger than max_age first) and its ranking.
pub fn compare(args: CompareArgs) -> Vec<Compared> {
    let targets = all_targets();
    let vols = volumes_of(&targets);
    // what is stored: each volume's newest complete call
    let mut calls: Vec<Option<String>> = vols
        .iter()
        .map(|v| {
            newest_call(&v.names, &args.max_age, args.min_reps, args.replicated)
                .and_then(|reps| reps.first().map(|r| r.call.clone()))
        })
        .collect();
    let to_measure: Vec<usize> = if args.measure {
        (0..vols.len()).filter(|&k| calls[k].is_none()).collect()
    } else {
        Vec::new()
    };
    if !to_measure.is_empty() {
        measure_volumes(&targets, &vols, &to_measure, &args);
        for &k in &to_measure {
            calls[k] = args.run.call.map(str::to_owned);
        }
    }
    // each volume's figures from its call
    let mut figs: Vec<VolumeFigures<TimestampWithTimeZone>> = Vec::new();
    let mut cut_short: Vec<usize> = Vec::new();
    let mut scores: Vec<Scores> = Vec::new();
    for (v, call) in vols.iter().zip(&calls) {
        let reps: Vec<Rep<TimestampWithTimeZone>> = match call {
            Some(c) => call_reps(&v.names, &args.max_age, c, args.replicated),
            None => Vec::new(),
        };
        let of_call: Vec<_> = reps.iter().collect();
        let f = figures(&of_call);
        if call.is_some() && !complete(&of_call, args.min_reps) {
            // only this call's own volumes can be incomplete: a stored call is chosen complete
            cut_short.push(figs.len());
        }
        scores.push(v.scores(&f));
        figs.push(f);
    }
    let names: Vec<&str> = vols.iter().map(|v| v.names[0].as_str()).collect();
    let ranks = rank(&scores, &names, args.run.precision_pct);
    let mut out: Vec<Option<Compared>> = (0..targets.len()).map(|_| None).collect();
    for (k, v) in vols.iter().enumerate() {
        let first = &targets[v.members[0]];
        let mut ranking = ranks[k].clone();
        if cut_short.contains(&k) {
            ranking.caveats.push(format!(
                "{}: the suite did not complete on this volume (see the WARNING)",
                if figs[k].scores == Scores::default() {
                    "not measured"
                } else {
                    "incomplete"
                }
            ));
        }
        if calls[k].is_none() {
            ranking.caveats.push(format!(
                "not measured: no complete suite call younger than max_age{}",
                if args.measure {
                    " (it could not be measured: see the WARNING)"
                } else {
                    "; compare_tablespaces() with measure => true measures it"
                }
            ));
        }
        for &i in &v.members {
            out[i] = Some(Compared {
                target: targets[i].clone(),
                figures: figs[k].clone(),
                volatile: scores[k].volatile,
                ranking: ranking.clone(),
                same_volume_as: (i != v.members[0]).then(|| first.name.clone()),
                call: calls[k].clone(),
            });
        }
    }
    out.into_iter().flatten().collect()
}

fn volatile(t: &Target) -> bool {
    env::facts(&t.folder)
        .map(|x| env::is_volatile(&x.fs_type, &x.device))
        .unwrap_or(false)
}

/// Each volume of `which` by its tablespaces: "pg_default (with pg_wal)".
fn described(vols: &[Volume], which: &[usize]) -> Vec<String> {
    which
        .iter()
        .map(|&k| match vols[k].names.split_first() {
            Some((first, [])) => first.clone(),
            Some((first, rest)) => format!("{first} (with {})", rest.join(", ")),
            None => String::new(),
        })
        .collect()
}

/// Measuring from compare_tablespaces() is what storlab.profile() does: a
/// role granted compare_tablespaces() to read (pg_monitor) measures only
/// where it may call profile() (42501, naming the way that reads).
fn check_may_measure(volumes: &[String]) -> Result<(), Error> {
    let may = read::one::<bool>(
        "SELECT pg_catalog.has_function_privilege(
                  'storlab.profile(name, interval, integer[], integer[], real, integer)', 'EXECUTE')",
        &[],
    )
    .map_err(spi("checking a privilege"))?
    .unwrap_or(false);
    if may {
        return Ok(());
    }
    Err(Error::new(
        SqlState::InsufficientPrivilege,
        format!(
            "compare_tablespaces() would measure {}, and measuring needs EXECUTE on storlab.profile()",
            volumes.join("; ")
        ),
    )
    .with_detail("They have no complete suite call younger than max_age. Nothing was measured.")
    .with_hint(
        "compare_tablespaces(measure => false) ranks the stored figures; a role granted storlab.profile() measures them.",
    ))
}

/// Measures the volumes `which` as one call: every item `min_reps` times,
/// round after round across the volumes (so that a change of load falls on
/// all of them alike), then the ranked figures that are less precise than
/// asked or tied, up to `max_reps`, while the time stated allows.
fn measure_volumes(targets: &[Target], vols: &[Volume], which: &[usize], args: &CompareArgs) {
    // 25006 in a read-only transaction, 42501 for a role that may not
    // measure by hand or not write to a volume, before the first probe
    standby::check_probes_can_be_kept().or_raise();
    let described = described(vols, which);
    // every grant missing, in one error: EXECUTE on profile() and CREATE
    // on the volumes' tablespaces
    let writes = check_may_write_each(which.iter().map(|&k| &targets[vols[k].measured_as]));
    match (check_may_measure(&described), writes) {
        (Err(mut e), Err(w)) => {
            e.detail = Some(format!(
                "{} Also: {}.",
                e.detail.unwrap_or_default(),
                w.message
            ));
            if let Some(h) = w.hint {
                e.hint = Some(format!("{} {h}", e.hint.unwrap_or_default()));
            }
            e.raise()
        }
        (Err(e), Ok(())) | (Ok(()), Err(e)) => e.raise(),
        (Ok(()), Ok(())) => {}
    }
    let sizes: Vec<u64> = which
        .iter()
        .map(|&k| suite_file_once(&targets[vols[k].measured_as], 1))
        .collect();
    let rates: Vec<f64> = which.iter().map(|&k| fill_rate(&vols[k].names)).collect();
    let most = most_time(
        &rates,
        args.min_reps,
        args.max_reps,
        args.run.duration,
        sizes.iter().copied().max().unwrap_or(0),
    );
    if args.within_timeout {
        check_time("compare_tablespaces()", most, |s| format!(
            "CALL storlab.measure_tablespaces() measures volume by volume and keeps each one it finishes; or SET LOCAL statement_timeout = '{s}s' in a transaction for this call, or ask for less (duration, max_repetitions), or rank the stored figures only: compare_tablespaces(measure => false)."
        ))
        .or_raise();
    }
    notice!(
        "storlab: measuring {} volume{}: {}; at most {} (the suite {} times on each, its ranked figures up to {} times where less precise than {} or tied, probes of at most {} after filling a {} MiB file; waits for another session's probes of the same devices come on top)",
        which.len(),
        if which.len() == 1 { "" } else { "s" },
        described.join("; "),
        seconds(most),
        args.min_reps,
        args.max_reps,
        args.run
            .precision_pct
            .map_or("their duration".to_string(), |p| format!("±{p} %")),
        seconds(args.run.duration),
        sizes.iter().copied().max().unwrap_or(0) >> 20
    );
    let deadline = Instant::now() + most;
    let mut failed = vec![false; which.len()];
    let all_items: Vec<usize> = (0..SUITE.len()).collect();
    let mut wants: Vec<Wanted> = vec![Wanted::default(); which.len()];
    for round in 1..=args.max_reps {
        let extra = round > args.min_reps;
        if extra && Instant::now() >= deadline {
            break;
        }
        let mut measured = false;
        for (j, &k) in which.iter().enumerate() {
            if failed[j] {
                continue;
            }
            let items = if extra {
                items_for(wants[j])
            } else {
                all_items.clone()
            };
            let target = &targets[vols[k].measured_as];
            // an extra probe starts only when even its slowest run ends
            // within the time the NOTICE stated
            let one_probe = probes_time(1, args.run.duration, sizes[j], rates[j]);
            for &item in &items {
                if extra && Instant::now() + one_probe > deadline {
                    break;
                }
                measured = true;
                if let Err(e) = measure_item(target, &SUITE[item], 1, sizes[j], args.run) {
                    if e.state == SqlState::QueryCanceled {
                        e.raise();
                    }
                    warn_skip(target, "compare_tablespaces", &e);
                    failed[j] = true;
                    break;
                }
            }
        }
        if round >= args.min_reps {
            if extra && !measured {
                break;
            }
            // what this call has so far, on every volume it measures
            let scores: Vec<Scores> = which
                .iter()
                .map(|&k| {
                    let reps = call_reps(
                        &vols[k].names,
                        &args.max_age,
                        args.run.call.unwrap_or_default(),
                        false,
                    );
                    vols[k].scores(&figures(&reps.iter().collect::<Vec<_>>()))
                })
                .collect();
            wants = wanted(&scores, args.run.precision_pct);
            if wants.iter().zip(&failed).all(|(w, f)| *f || !w.any()) {
                break;
            }
        }
    }
}

/// A new suite call's id: a uuid, which a standby can make too (no
/// sequence to advance) and which stays unique across a fleet.
pub fn new_call() -> String {
    read::one::<String>("SELECT pg_catalog.gen_random_uuid()::text", &[])
        .map_err(spi("naming the suite call"))
        .or_raise()
        .expect("gen_random_uuid() returns a value")
}

/// A uuid's text as the SQL type.
pub fn uuid(text: &str) -> Option<pgrx::datum::Uuid> {
    let u = ::uuid::Uuid::parse_str(text).ok()?;
    Some(pgrx::datum::Uuid::from_bytes(*u.as_bytes()))
}

/// The stored figures of every volume, whatever their age, from its newest
/// suite call with 2 repetitions or more of each ranked figure, as
/// compare_tablespaces(measure => false) ranks them by default: what the
/// tablespaces chart draws (a 1-worker profile(), one repetition, is no
/// comparison's figure).
pub fn stored() -> Vec<Compared> {
    compare(CompareArgs {
        max_age: Interval::new(12 * 1000, 0, 0).expect("1000 years is an interval"),
        run: SuiteRun {
            duration: Duration::ZERO,
            precision_pct: None,
            label: "compare_tablespaces",
            call: None,
        },
        min_reps: 2,
        max_reps: 2,
        measure: false,
        replicated: true,
        within_timeout: true,
    })
}

/// Each target's name with the names of every target on its volume (its
/// own first): readers keyed by tablespace (recommend()) show a volume's
/// figures for each tablespace on it, as compare_tablespaces() does.
pub fn volume_members() -> Vec<(String, Vec<String>)> {
    let targets = all_targets();
    let vols = volumes_of(&targets);
    let mut out = Vec::new();
    for v in &vols {
        for &i in &v.members {
            let mut peers = vec![targets[i].name.clone()];
            peers.extend(
                v.members
                    .iter()
                    .filter(|&&j| j != i)
                    .map(|&j| targets[j].name.clone()),
            );
            out.push((targets[i].name.clone(), peers));
        }
    }
    out
}

/// measure_tablespaces()'s step: the volume `tablespace` is on, measured
/// as part of suite call `args.run.call` unless it has a complete call
/// younger than max_age; the number of probes it made. The procedure
/// commits after each volume, so a cancel keeps every volume it finished.
pub fn measure_volume_of(tablespace: &str, args: &CompareArgs) -> i64 {
    let targets = all_targets();
    let vols = volumes_of(&targets);
    let Some(k) = vols
        .iter()
        .position(|v| v.members.iter().any(|&i| targets[i].name == tablespace))
    else {
        Error::new(
            SqlState::UndefinedObject,
            format!("tablespace \"{tablespace}\" does not exist"),
        )
        .raise()
    };
    let names = &vols[k].names;
    if newest_call(names, &args.max_age, args.min_reps, false).is_some() {
        return 0;
    }
    measure_volumes(&targets, &vols, &[k], args);
    call_reps(
        names,
        &args.max_age,
        args.run.call.unwrap_or_default(),
        false,
    )
    .len() as i64
}
