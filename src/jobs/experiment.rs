//! The steps of an experiment job (`request::experiment::Experiment::steps`):
//! per fillfactor, pgbench -i and the sizes under each layout; then per
//! repetition, each (layout, clients) cell in alternating order: apply the
//! layout, VACUUM, CHECKPOINT, warm up, measure.
//!
//! Every step runs in short transactions of its own (as the caller, or as
//! the owner for storlab's rows): no snapshot is held while pgbench runs.
//! A step already done (a resumed experiment: a measured run stored with
//! its TPS, sizes recorded) is skipped, so resuming runs only what is
//! missing.

use std::collections::HashSet;
use std::path::Path;
use std::time::Duration;

use pgrx::prelude::*;
use pgrx::JsonB;

use super::bench;
use super::client::{connection, psql_commands};
use super::job::{as_caller, bookkeeping, store_detail, Job, JobEnd};
use super::observe::{observe_relations, observe_wal, pgbench_schema};
use super::stop::stop_requested;
use crate::ops::jobs::{check_pgbench_tables_complete, may_checkpoint};
use crate::ops::read;
use crate::ops::record;
use crate::ops::relocate::apply_pgbench_placement;
use crate::ops::report;
use crate::ops::server::{data_dir, hostname, system_identifier};
use crate::sqltypes::Name;
use storlab_core::env;
use storlab_core::error::SqlState;
use storlab_core::record::{ExperimentProgress, ExperimentWalStop, Record};
use storlab_core::report::experiment::{placement_sentence, Expected, Observation};
use storlab_core::report::{pooled, sequential};
use storlab_core::request::bench::BenchInit;
use storlab_core::request::experiment::{pgoptions, session_settings, Experiment, Step};
use storlab_core::sql_text::{ident, literal};

/// What is already stored for the experiment (a resumed one has some).
struct Done {
    /// (fillfactor, repetition, layout, clients) of measured runs with a TPS
    runs: HashSet<(i32, i32, String, i32)>,
    /// (fillfactor, layout) whose sizes are recorded
    sizes: HashSet<(i32, String)>,
}

impl Done {
    fn step(&self, e: &Experiment, step: Step) -> bool {
        match step {
            Step::Init { .. } => false,
            Step::Sizes { fillfactor, layout } => self
                .sizes
                .contains(&(fillfactor, e.layouts[layout].name.clone())),
            Step::Run {
                fillfactor,
                repetition,
                layout,
                clients,
            } => self.runs.contains(&(
                fillfactor,
                repetition,
                e.layouts[layout].name.clone(),
                clients,
            )),
        }
    }

    /// Has any step of this fillfactor been done (then its tables are
    /// kept when they are still as pgbench -i made them)?
    fn any_of(&self, e: &Experiment, fillfactor: i32) -> bool {
        e.steps().into_iter().any(|s| match s {
            Step::Sizes { fillfactor: f, .. } | Step::Run { fillfactor: f, .. } => {
                f == fillfactor && self.step(e, s)
            }
            Step::Init { .. } => false,
        })
    }

    /// Does this fillfactor have a step left to do?
    fn open(&self, e: &Experiment, fillfactor: i32) -> bool {
        e.steps().into_iter().any(|s| match s {
            Step::Sizes { fillfactor: f, .. } | Step::Run { fillfactor: f, .. } => {
                f == fillfactor && !self.step(e, s)
            }
            Step::Init { .. } => false,
        })
    }
}

fn done(job: &Job, e: &Experiment) -> Done {
    bookkeeping(|| {
        // the runs the report pools: one left out is measured again
        let runs = report::judged_runs(job.id, e)
            .into_iter()
            .filter(|(_, why)| why.is_none())
            .filter_map(|(r, _)| Some((r.fillfactor?, r.repetition, r.layout, r.clients)))
            .collect();
        let sizes = Spi::connect(|c| {
            c.select(
                "SELECT DISTINCT fillfactor, layout FROM storlab.experiment_sizes WHERE experiment_id = $1",
                None,
                &[job.id.into()],
            )?
            .map(|r| Ok((r.get::<i32>(1)?.unwrap_or(0), r.get::<String>(2)?.unwrap_or_default())))
            .collect::<Result<HashSet<_>, pgrx::spi::Error>>()
        })?;
        Ok(Done { runs, sizes })
    })
}

pub fn run(job: &Job, e: &Experiment, dir: &Path) -> Result<(), JobEnd> {
    let done = done(job, e);
    let steps = e.steps();
    let mut measured = 0;
    for (i, &step) in steps.iter().enumerate() {
        // a cancel() or a signal, checked between steps (pgbench and psql
        // are watched while they run)
        if let Some(why) = stop_requested(job.id) {
            return Err(JobEnd::Stopped(why));
        }
        if done.step(e, step) {
            progress(job, i + 1, &e.describe(step, "done before"));
            continue;
        }
        match step {
            Step::Init { fillfactor } => {
                if !done.open(e, fillfactor) {
                    progress(job, i + 1, &e.describe(step, "done before"));
                    continue;
                }
                // a resumed fillfactor keeps its tables when they are whole
                // (their history goes on); a new one starts from pgbench -i,
                // unless asked to reuse whole tables it finds
                if (done.any_of(e, fillfactor) || e.reuse_tables)
                    && tables_whole(e.scale, fillfactor)
                {
                    progress(job, i + 1, &e.describe(step, "tables kept from before"));
                    continue;
                }
                progress(job, i, &e.describe(step, ""));
                // into the layout the first size step wants: one move less
                let first = &e.layouts[e.layouts.len() - 1].placement;
                let init = BenchInit {
                    scale: e.scale,
                    fillfactor,
                    tablespace: first.tables.clone(),
                    index_tablespace: first.indexes.clone(),
                    partitions: 0,
                };
                bench::init(job, &init, &dir.join(format!("init_{fillfactor}")))?;
                set_layout_applied(job, None);
            }
            Step::Sizes { fillfactor, layout } => {
                place(job, e, step, i, layout)?;
                progress(job, i, &e.describe(step, "recording sizes"));
                record_sizes(job, fillfactor, &e.layouts[layout].name)?;
            }
            Step::Run {
                fillfactor,
                repetition,
                layout,
                clients,
            } => {
                // a sequential experiment looks after each repetition: a
                // run whose comparison was decided is not needed
                let open = if e.stop.is_some() {
                    let compared =
                        bookkeeping(|| Ok(report::comparisons(job.id, e, repetition as u32 - 1)));
                    if sequential::skip(e, &compared, step) {
                        progress(job, i + 1, &e.describe(step, "not needed: decided"));
                        continue;
                    }
                    Some(sequential::sentence(e, &compared))
                } else {
                    None
                };
                // what storlab.experiments shows while it runs: the phase,
                // and which comparisons are still open
                let doing = |phase: &str| match open.as_deref() {
                    Some(o) if !o.is_empty() => e.describe(step, &format!("{phase} ({o})")),
                    _ => e.describe(step, phase),
                };
                // pg_wal moves only while the server is stopped: the
                // experiment stops here, for a person or a script to move
                // it and resume (nothing is reordered)
                if let Some(needed) = e.wal_needed(step) {
                    let here = observe_wal(Some(needed)).map_err(JobEnd::Failed)?;
                    if here.tablespace.as_deref() != Some(needed) {
                        tablespace_exists(needed)?;
                        let why = e.wal_stop_reason(
                            job.id,
                            step,
                            needed,
                            here.tablespace.as_deref(),
                            &here.mount_point,
                        );
                        stop_for_wal(job, i, needed, &why);
                        return Ok(());
                    }
                }
                // VACUUM before the move: the move copies vacuumed pages, and
                // the pages the last run changed are read where that run left
                // them, not again from the new layout's storage (on a
                // 200-IOPS disk, thousands of random reads before each run)
                progress(job, i, &doing("VACUUM"));
                vacuum_analyze(job, &dir.join("psql"))?;
                place(job, e, step, i, layout)?;
                if e.run.checkpoint_before == Some(true) {
                    progress(job, i, &doing("CHECKPOINT"));
                    as_caller(|| Spi::run("CHECKPOINT"));
                }
                let name = &e.layouts[layout].name;
                let options = pgoptions(&e.layouts[layout].placement);
                let expected = expected(e, layout, fillfactor);
                if e.warmup_s > 0 {
                    progress(job, i, &doing("warm-up run"));
                    let _warmup = one_run(
                        job,
                        e,
                        name,
                        repetition,
                        clients,
                        true,
                        dir,
                        options.as_deref(),
                        &expected,
                    )?;
                }
                progress(job, i, &doing("measured run"));
                let run_id = one_run(
                    job,
                    e,
                    name,
                    repetition,
                    clients,
                    false,
                    dir,
                    options.as_deref(),
                    &expected,
                )?;
                mark_other_conditions(job, e, run_id);
                measured += 1;
            }
        }
        progress(job, i + 1, &e.describe(step, "done"));
    }
    let counted = bookkeeping(|| {
        let judged = report::judged_runs(job.id, e);
        let (runs, why): (Vec<_>, Vec<_>) = judged.into_iter().unzip();
        Ok(pooled::tally(&runs, &why, &e.fillfactors))
    });
    // a sequential experiment says how it ended: each comparison decided,
    // or undecided at the maximum
    let comparisons = e.stop.is_some().then(|| {
        let compared = bookkeeping(|| Ok(report::comparisons(job.id, e, e.repetitions as u32)));
        (
            sequential::tally(&compared),
            sequential::sentence(e, &compared),
        )
    });
    // what a DBA must know before trusting the figures, in the job's
    // detail: CALL storlab.experiment says them when it returns (the
    // report has them per cell)
    let caveats = bookkeeping(|| Ok(report::experiment_caveats(job.id, e)));
    store_detail(job, serde_json::json!({ "caveats": caveats }));
    progress(
        job,
        steps.len(),
        &counted.closing(job.id, measured, comparisons),
    );
    Ok(())
}

/// The tablespace a layout's `wal` names, still there (checked when the
/// experiment was started; it may have been dropped since).
fn tablespace_exists(name: &str) -> Result<(), JobEnd> {
    let found = as_caller(|| {
        read::one::<bool>(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_tablespace WHERE spcname OPERATOR(pg_catalog.=) $1)",
            &[Name(name.to_string()).into()],
        )
    });
    if found == Some(true) {
        Ok(())
    } else {
        Err(JobEnd::error(
            SqlState::UndefinedObject,
            format!("tablespace \"{name}\" does not exist: a layout's \"wal\" names it"),
            None,
        ))
    }
}

/// Ends the job's work before step `i` (not run): pg_wal is not where the
/// step needs it. The job ends done, storlab.experiments shows `needed` in
/// wal_needed and `why` as its current action until it is resumed.
fn stop_for_wal(job: &Job, i: usize, needed: &str, why: &str) {
    bookkeeping(|| {
        let stop = ExperimentWalStop {
            current_step: i as i32,
            current_action: Some(why.to_string()),
            wal_needed: Some(needed.to_string()),
        };
        Spi::run_with_args(
            &record::update_sql(&stop, "id", &[])?,
            &[job.id.into(), JsonB(stop.to_json()).into()],
        )
    });
}

/// Marks the measured run `run_id` invalid when it ran under other
/// conditions (settings, pgbench's relations) than the experiment's runs
/// before it (`storlab_core::report::pooled`): its row says why, as for
/// observations that disagree with its layout, and the report finds the
/// same.
fn mark_other_conditions(job: &Job, e: &Experiment, run_id: i64) {
    bookkeeping(|| {
        let judged = report::judged_runs(job.id, e);
        let Some((_, Some(why))) = judged
            .iter()
            .find(|(r, _)| r.id == run_id && r.invalid.is_none())
        else {
            return Ok(());
        };
        Spi::run_with_args(
            "UPDATE storlab.bench_runs SET invalid = $2 WHERE id = $1 AND invalid IS NULL",
            &[run_id.into(), why.clone().into()],
        )
    });
}

/// What a run of this cell must observe: the layout's tablespaces (every
/// part stated since the experiment was started), the cell's fillfactor,
/// and each of the layout's settings as the server spells its value (read
/// with set_config in a transaction that keeps nothing).
fn expected(e: &Experiment, layout: usize, fillfactor: i32) -> Expected {
    let p = &e.layouts[layout].placement;
    let mut settings = Vec::new();
    for (name, value) in session_settings(p) {
        let spelled = as_caller(|| {
            read::one::<String>(
                "SELECT pg_catalog.set_config($1, $2, true)",
                &[name.clone().into(), value.clone().into()],
            )
        })
        .unwrap_or(value);
        settings.push((name.to_lowercase(), spelled));
    }
    Expected {
        tables: p.tables.clone(),
        indexes: p.indexes.clone(),
        fillfactor: Some(fillfactor),
        settings,
        wal: p.wal.clone(),
    }
}

fn progress(job: &Job, step: usize, action: &str) {
    bookkeeping(|| {
        let progress = ExperimentProgress {
            current_step: step as i32,
            current_action: Some(action.to_string()),
        };
        Spi::run_with_args(
            &record::update_sql(&progress, "id", &[])?,
            &[job.id.into(), JsonB(progress.to_json()).into()],
        )
    });
}

fn set_layout_applied(job: &Job, layout: Option<&str>) {
    bookkeeping(|| {
        Spi::run_with_args(
            "UPDATE storlab.experiment_records SET layout_applied = $2 WHERE id = $1",
            &[job.id.into(), layout.into()],
        )
    });
}

/// Moves pgbench's relations to the layout (only those not there yet), as
/// the caller, in one transaction: a failed move (a lock timeout) leaves
/// every relation where the last completed placement put them, and the
/// experiment fails with that error.
fn place(job: &Job, e: &Experiment, step: Step, i: usize, layout: usize) -> Result<(), JobEnd> {
    let l = &e.layouts[layout];
    let schema = pgbench_schema()?;
    progress(job, i, &e.describe(step, "applying the layout"));
    let label = format!("experiment {} ({}): layout {}", job.id, e.name, l.name);
    let timeout = Duration::from_millis(e.lock_timeout_ms);
    as_caller(|| {
        let _ = apply_pgbench_placement(
            l.placement.tables.as_deref(),
            l.placement.indexes.as_deref(),
            &schema,
            timeout,
            &label,
            job.id,
        );
        Ok(())
    });
    // what the placement did, observed: the layout counts as applied only
    // when every relation is where it puts them, and status texts later
    // compare with this observation (placement_now), not with the request
    let seen = observe_relations(&schema);
    let holds = |rels: &std::collections::BTreeMap<String, String>, want: &Option<String>| {
        want.as_ref().is_none_or(|w| rels.values().all(|t| t == w))
    };
    let applied =
        holds(&seen.tables, &l.placement.tables) && holds(&seen.indexes, &l.placement.indexes);
    set_layout_applied(job, applied.then_some(l.name.as_str()));
    store_detail(
        job,
        serde_json::json!({ "placed": if applied { serde_json::to_value(&seen).unwrap_or_default() } else { serde_json::Value::Null } }),
    );
    Ok(())
}

/// Where pgbench's relations are now, for a status text: observed now and
/// compared with what was observed when the last layout was applied.
pub(super) fn placement_now(job_id: i64) -> String {
    let (layout, placed) = bookkeeping(|| {
        read::two::<String, JsonB>(
            "SELECT e.layout_applied, j.detail->'placed' FROM storlab.experiment_records e
               JOIN storlab.job_records j ON j.id = e.id WHERE e.id = $1",
            &[job_id.into()],
        )
    });
    let placed: Option<Observation> = placed.and_then(|p| serde_json::from_value(p.0).ok());
    let now = pgbench_schema()
        .map(|s| observe_relations(&s))
        .unwrap_or_default();
    placement_sentence(layout.as_deref(), placed.as_ref(), &now)
}

/// Are pgbench's tables as pgbench -i leaves them at this scale and
/// fillfactor (a run killed half-way through pgbench -i leaves them short)?
fn tables_whole(scale: i32, fillfactor: i32) -> bool {
    let Ok(schema) = pgbench_schema() else {
        return false;
    };
    // pgbench -i's last step, checked as every run checks it
    if as_caller(|| Ok(check_pgbench_tables_complete(&schema))).is_err() {
        return false;
    }
    let s = ident(&schema);
    let accounts = literal(&format!("{s}.pgbench_accounts"));
    as_caller(|| {
        read::one::<bool>(&format!(
            "SELECT pg_catalog.to_regclass('{s}.storlab_bench_append') IS NOT NULL
                AND (SELECT pg_catalog.count(*) FROM {s}.pgbench_branches) = {scale}
                AND (SELECT pg_catalog.count(*) FROM {s}.pgbench_accounts) = {scale}::int8 * 100000
                AND coalesce((SELECT o.option_value::int FROM pg_catalog.pg_class c,
                                     pg_catalog.pg_options_to_table(c.reloptions) o
                               WHERE c.oid = {accounts}::regclass AND o.option_name = 'fillfactor'), 100) = {fillfactor}"
        ), &[])
    })
    .unwrap_or(false)
}

/// Every run starts from vacuumed tables. pgbench_accounts is not analyzed
/// again: its statistics come from pgbench -i and do not change with a
/// layout, while ANALYZE reads 30,000 random pages of it (default statistics
/// target): two and a half minutes on a 200-IOPS disk, before every run.
fn vacuum_analyze(job: &Job, dir: &Path) -> Result<(), JobEnd> {
    let s = ident(&pgbench_schema()?);
    // two commands: VACUUM refuses to run inside a multi-statement string
    let accounts = format!("VACUUM {s}.pgbench_accounts");
    let small =
        format!("VACUUM ANALYZE {s}.pgbench_branches, {s}.pgbench_tellers, {s}.pgbench_history");
    psql_commands(job, &connection(job), &[&accounts, &small], dir).map(|_| ())
}

/// One warm-up or measured run: its storlab.bench_runs row (an id from the
/// jobs' sequence, job_id the experiment's), then the run itself; its id.
#[allow(clippy::too_many_arguments)]
fn one_run(
    job: &Job,
    e: &Experiment,
    layout: &str,
    repetition: i32,
    clients: i32,
    warmup: bool,
    dir: &Path,
    pgoptions: Option<&str>,
    expected: &Expected,
) -> Result<i64, JobEnd> {
    let mut r = e.run(clients, if warmup { e.warmup_s } else { e.duration_s });
    let options = r.options.to_json();
    // the experiment's own CHECKPOINT came before the warm-up
    r.options.checkpoint_before = Some(false);
    let run_id = bookkeeping(|| {
        Spi::get_one_with_args::<i64>(
            "INSERT INTO storlab.bench_runs (id, job_id, script, clients, jobs, duration_s, options, label,
                                             system_identifier, hostname, experiment_id, experiment_layout,
                                             repetition, warmup)
             VALUES (pg_catalog.nextval('storlab.job_records_id_seq'), $1, $2, $3, $4, $5, $6, $7, $8, $9, $1, $10, $11, $12)
             RETURNING id",
            &[
                job.id.into(),
                r.script.clone().into(),
                r.clients.into(),
                r.jobs.into(),
                (r.duration_s as f64).into(),
                JsonB(options).into(),
                e.name.clone().into(),
                system_identifier().into(),
                hostname().into(),
                layout.into(),
                repetition.into(),
                warmup.into(),
            ],
        )
    })
    .unwrap_or_default();
    bench::run(
        job,
        run_id,
        &r,
        &dir.join(format!("run_{run_id}")),
        pgoptions,
        Some(expected),
    )?;
    Ok(run_id)
}

/// One of pgbench's relations, where its files are.
struct SizedRel {
    name: String,
    /// table or index
    kind: String,
    tablespace: String,
    /// pg_relation_filepath, relative to the data folder
    path: Option<String>,
    /// the tablespace's location; empty for the database's default
    location: Option<String>,
}

/// The size of each of pgbench's tables and indexes where the layout put
/// them: logical (the files' length), allocated (the filesystem's blocks)
/// and stored (what the storage holds after compression, where the kernel
/// can tell; see env::stored).
fn record_sizes(job: &Job, fillfactor: i32, layout: &str) -> Result<(), JobEnd> {
    let schema = pgbench_schema()?;
    let rels: Vec<SizedRel> = as_caller(|| {
        Spi::connect(|c| {
            c.select(
                "SELECT c.relname::text, CASE c.relkind WHEN 'i' THEN 'index' ELSE 'table' END,
                        coalesce(t.spcname, d.spcname)::text, pg_catalog.pg_relation_filepath(c.oid),
                        coalesce(pg_catalog.pg_tablespace_location(t.oid), '')
                   FROM pg_catalog.pg_class c
                   JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
                   LEFT JOIN pg_catalog.pg_tablespace t ON t.oid = c.reltablespace
                  CROSS JOIN (SELECT s.spcname FROM pg_catalog.pg_database db
                                JOIN pg_catalog.pg_tablespace s ON s.oid = db.dattablespace
                               WHERE db.datname = pg_catalog.current_database()) d
                  WHERE n.nspname = $1 AND c.relkind IN ('r', 'i')
                    AND coalesce((SELECT tc.relname FROM pg_catalog.pg_index ix
                                    JOIN pg_catalog.pg_class tc ON tc.oid = ix.indrelid
                                   WHERE ix.indexrelid = c.oid), c.relname)
                        ~ '^(pgbench_(accounts|branches|tellers|history)|storlab_bench_append)$'
                  ORDER BY c.relkind DESC, c.relname",
                None,
                &[Name(schema.clone()).into()],
            )?
            .map(|r| {
                Ok(SizedRel {
                    name: r.get::<String>(1)?.unwrap_or_default(),
                    kind: r.get::<String>(2)?.unwrap_or_default(),
                    tablespace: r.get::<String>(3)?.unwrap_or_default(),
                    path: r.get::<String>(4)?,
                    location: r.get::<String>(5)?,
                })
            })
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
    });
    let data = data_dir();
    // the tablespace's folder tells its storage; pg_default's is the data folder
    let folder = |location: &Option<String>| match location.as_deref() {
        Some(l) if !l.is_empty() => std::path::PathBuf::from(l),
        _ => data.clone(),
    };
    let mut folders: Vec<std::path::PathBuf> = rels.iter().map(|r| folder(&r.location)).collect();
    folders.sort();
    folders.dedup();
    // written pages may still sit in shared buffers and the page cache:
    // flush them, so that the sizes are the storage's, not a guess
    if let Some(why) = checkpoint_and_sync(job, &folders) {
        return Err(JobEnd::Stopped(why));
    }
    bookkeeping(|| {
        for SizedRel {
            name,
            kind,
            tablespace,
            path,
            location,
        } in &rels
        {
            let Some(path) = path else { continue };
            let sizes = env::stored::relation_sizes(&data.join(path));
            let stored = env::stored::stored_bytes(&folder(location), &sizes);
            Spi::run_with_args(
                "INSERT INTO storlab.experiment_sizes (experiment_id, fillfactor, layout, relation_name, kind, tablespace,
                                                       logical_bytes, allocated_bytes, stored_bytes)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (experiment_id, fillfactor, layout, relation_name) DO UPDATE
                   SET kind = EXCLUDED.kind, tablespace = EXCLUDED.tablespace, logical_bytes = EXCLUDED.logical_bytes,
                       allocated_bytes = EXCLUDED.allocated_bytes, stored_bytes = EXCLUDED.stored_bytes,
                       measured_at = pg_catalog.clock_timestamp()",
                &[
                    job.id.into(),
                    fillfactor.into(),
                    layout.into(),
                    name.clone().into(),
                    kind.clone().into(),
                    Name(tablespace.clone()).into(),
                    (sizes.logical as i64).into(),
                    (sizes.allocated as i64).into(),
                    stored.map(|b| b as i64).into(),
                ],
            )?;
        }
        Ok(())
    });
    Ok(())
}

/// CHECKPOINT (when the role may) and syncfs of the relations'
/// filesystems, so that compressed sizes are settled (btrfs compresses at
/// writeback, zram when the block arrives); a stop request found on the way.
fn checkpoint_and_sync(job: &Job, folders: &[std::path::PathBuf]) -> Option<String> {
    if as_caller(|| Ok(may_checkpoint())) {
        as_caller(|| Spi::run("CHECKPOINT"));
    }
    for f in folders {
        let _ = env::space::settle(f);
    }
    stop_requested(job.id)
}
