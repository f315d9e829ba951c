//! pg_repack of one table into its target: run as the job's role,
//! watched, observed after, recorded when the table moved, tidied however
//! it ended.

use std::path::Path;
use std::time::{Duration, Instant};

use pgrx::prelude::*;

use super::leftovers::{drop_leftovers, repack_running};
use super::shared::{chrono_now, row, show_phase, write, QUIET, SAMPLE};
use super::tidy::tidy_later;
use super::watch::{locked_relations, stopped_itself, Waits, Watcher};
use crate::jobs::client::{server_program, with_env};
use crate::jobs::job::{as_caller, Job, JobEnd};
use crate::ops::read;
use crate::ops::relocate::{index_identity, lock_holders, where_now};
use storlab_core::pgbench::process::{self, Outcome};
use storlab_core::pgbench::Connection;
use storlab_core::record::Relocation;
use storlab_core::relocate::human_bytes;
use storlab_core::repack::outcome::{left_before, running_now, Outcome as RunOutcome, RunEnd};
use storlab_core::repack::{self, Phase, Version};
use storlab_core::request::relocate::{MoveOnline, OnlineTable};

/// pg_repack of one table into its target: run, watched, observed after,
/// recorded when the table moved, tidied however it ended.
pub(super) fn repack_table(
    job: &Job,
    m: &MoveOnline,
    t: &OnlineTable,
    conn: &Connection,
    dir: &Path,
    version: Version,
) -> Result<(), JobEnd> {
    let oid = pg_sys::Oid::from(t.relation);
    let limit = Duration::from_millis(m.lock_timeout_ms);
    // a pg_repack run by hand (or another tool) on the table now: its
    // objects are its own, and pg_repack would refuse anyway
    if let Some(pid) = repack_running(oid) {
        return Err(running_now(&t.name, pid, &t.from).into());
    }
    // an earlier run cut short left its objects (pg_repack refuses a table
    // with its trigger): removed first
    let left = drop_leftovers(conn, dir, oid, limit);
    if !left.is_empty() {
        return Err(left_before(&t.name, &left).into());
    }
    let (from, bytes) = as_caller(|| Ok::<_, pgrx::spi::Error>(where_now(oid)))
        .unwrap_or_else(|| (t.from.clone(), t.bytes));
    let run = repack::Run {
        table: &t.name,
        tablespace: &t.to,
        move_indexes: t.repack_moves_indexes(),
        lock_timeout_ms: m.lock_timeout_ms,
    };
    let indexes_before = index_places(oid);
    let relations = locked_relations(oid);
    let since = chrono_now();
    show_phase(job, t, Phase::Starting.as_str());
    let program = server_program("pg_repack");
    let args = run.args(version, conn);
    std::fs::create_dir_all(dir)
        .map_err(|e| JobEnd::Failed(format!("cannot create {}: {e}", dir.display())))?;
    let mut watcher = Watcher::new(job, t, m.lock_timeout_ms, relations, since.clone(), dir);
    let started = Instant::now();
    let mut stop = || watcher.look();
    // PGAPPNAME is pg_repack's own ("pg_repack"): it leaves other pg_repack
    // sessions out of the transactions it waits for. Its sessions'
    // lock_timeout is the call's and a second: pg_repack sets its own
    // around each attempt at its exclusive lock and RESETs it after, back
    // to this one, so that every other lock it waits for is bounded too
    // (its cleanup's repack_drop would otherwise queue for ACCESS EXCLUSIVE
    // with no limit, and block the table's writers behind it). The second
    // lets the watcher above act first on what it knows: a session's DDL
    // queued behind pg_repack, in front of pg_repack's own next request, is
    // its doing to name (pg_repack would fail with PostgreSQL's bare "lock
    // timeout", naming no one).
    let outcome = with_env(
        "PGOPTIONS",
        &format!("-c lock_timeout={}ms", m.lock_timeout_ms + 1000),
        || {
            process::run(
                &program,
                &args,
                dir,
                Duration::from_secs(7 * 24 * 3600),
                &mut stop,
            )
        },
    )
    .map_err(|e| JobEnd::Failed(format!("cannot run {}: {e}", program.display())));
    let elapsed = started.elapsed();
    let stdout = std::fs::read_to_string(dir.join("stdout")).unwrap_or_default();
    let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    let last_phase = watcher.finish(&stderr);
    let stopped = match outcome? {
        // stopped by the job itself, not cancelled: the outcome (RunEnd) says why
        Outcome::Stopped(why) if stopped_itself(&why) => {
            cancel_sessions(&job.role, &since);
            None
        }
        Outcome::Stopped(why) => {
            // its sessions go on without their client until told
            cancel_sessions(&job.role, &since);
            Some(why)
        }
        Outcome::Exited(_) => None,
    };
    // only what this run made: a run refused at its start (another
    // pg_repack holds the table's advisory lock) made nothing, and the
    // objects there are that other run's
    let left = if watcher.made() {
        drop_leftovers(conn, dir, oid, limit.max(Duration::from_secs(2)))
    } else {
        Vec::new()
    };
    let now = as_caller(|| Ok::<_, pgrx::spi::Error>(where_now(oid)));
    let mut end = RunEnd {
        table: t.name.clone(),
        to: t.to.clone(),
        from,
        now: now.map(|(ts, _)| ts),
        lock_timeout_ms: m.lock_timeout_ms,
        version,
        stopped,
        left,
        said: format!("{stdout}{stderr}"),
        last_phase,
        behind: watcher.behind.take(),
        held_by: watcher.held_by.take(),
        others_max_s: watcher.waits.others_max,
        others_total_s: watcher.waits.others_total,
        holders: None,
    };
    if end.moved() {
        record_table(
            job,
            m,
            t,
            &end.from,
            bytes,
            &run,
            version,
            elapsed,
            &watcher.waits,
            &watcher.phases,
            &indexes_before,
        );
    }
    // pg_locks is read again only when the outcome names who holds a lock
    if end.names_holders() {
        end.holders = as_caller(|| Ok::<_, pgrx::spi::Error>(lock_holders(oid)));
    }
    if end.tidied_later() {
        tidy_later(t);
    }
    match end.outcome() {
        RunOutcome::Moved => Ok(()),
        RunOutcome::Stopped(why) => Err(JobEnd::Stopped(why)),
        RunOutcome::Refused(e) => Err(e.into()),
        RunOutcome::Failed(why) => Err(JobEnd::Failed(why)),
    }
}

/// Cancels the job's pg_repack sessions still running a statement (found
/// by application_name and role, in this database), as the job's role;
/// waits up to two seconds for them to be gone. A pg_repack client killed
/// mid-copy leaves its backend copying until it next talks to it.
fn cancel_sessions(role: &str, since: &str) {
    let busy = || {
        as_caller(|| {
            read::one::<i64>(
                "SELECT pg_catalog.count(*) FROM pg_catalog.pg_stat_activity
                  WHERE application_name = 'pg_repack' AND usename = $1 AND backend_start >= $2::timestamptz
                    AND datname = pg_catalog.current_database() AND pid <> pg_catalog.pg_backend_pid()",
                &[role.into(), since.into()],
            )
        })
        .unwrap_or(0)
    };
    as_caller(|| {
        read::one::<i64>(
            "SELECT pg_catalog.count(pg_catalog.pg_terminate_backend(pid)) FROM pg_catalog.pg_stat_activity
              WHERE application_name = 'pg_repack' AND usename = $1 AND backend_start >= $2::timestamptz
                AND datname = pg_catalog.current_database() AND pid <> pg_catalog.pg_backend_pid()",
            &[role.into(), since.into()],
        )
    });
    let start = Instant::now();
    while busy() > 0 && start.elapsed() < Duration::from_secs(2) {
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Each valid index of the table: its oid, name, tablespace and bytes.
fn index_places(oid: pg_sys::Oid) -> Vec<(u32, String, String, i64)> {
    as_caller(|| {
        Spi::connect(|c| {
            c.select(
                "SELECT i.indexrelid FROM pg_catalog.pg_index i WHERE i.indrelid = $1 AND i.indisvalid ORDER BY i.indexrelid",
                None,
                &[oid.into()],
            )?
            .map(|r| Ok(r.get::<pg_sys::Oid>(1)?.expect("oid")))
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
        .map(|oids| {
            oids.into_iter()
                .filter_map(|o| {
                    let name = read::one::<String>(
                        "SELECT pg_catalog.format('%I.%I', n.nspname, c.relname) FROM pg_catalog.pg_class c
                           JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = $1",
                        &[o.into()],
                    )
                    .ok()
                    .flatten()?;
                    let (ts, bytes) = where_now(o)?;
                    Some((o.to_u32(), name, ts, bytes))
                })
                .collect()
        })
    })
}

/// The rows of a pg_repack run that moved its table: the table's, and one
/// for each index it moved with `--moveidx`.
#[allow(clippy::too_many_arguments)]
fn record_table(
    job: &Job,
    m: &MoveOnline,
    t: &OnlineTable,
    from: &str,
    bytes: i64,
    run: &repack::Run,
    version: Version,
    elapsed: Duration,
    waits: &Waits,
    phases: &[(Phase, Instant)],
    indexes_before: &[(u32, String, String, i64)],
) {
    let timeline: Vec<String> = phases
        .windows(2)
        .filter(|w| w[0].0 != Phase::Starting)
        .map(|w| {
            format!(
                "{} {:.2} s",
                w[0].0.as_str(),
                w[1].1.duration_since(w[0].1).as_secs_f64()
            )
        })
        .collect();
    let note = format!(
        "moved online by pg_repack {version}: writes went on; its exclusive locks (to install its trigger, to swap, to drop) were queued {:.3} s in all ({} ms at most each time), and the longest another session waited for a lock on the table meanwhile was {:.3} s, some session waiting during {:.3} s in all (pg_locks sampled every {} ms while pg_repack took or held its exclusive lock, every {} ms otherwise); {} copied; its WAL is not known here (other sessions wrote theirs meanwhile){}",
        waits.own_total(),
        repack::queued_budget_ms(m.lock_timeout_ms),
        waits.others_max,
        waits.others_total,
        SAMPLE.as_millis(),
        QUIET.as_millis(),
        human_bytes(bytes),
        if timeline.is_empty() {
            String::new()
        } else {
            format!("; phases as seen: {}", timeline.join(", "))
        }
    );
    let base = Relocation {
        relation: t.relation,
        relation_name: t.name.clone(),
        kind: "table".into(),
        from_tablespace: from.to_string(),
        to_tablespace: t.to.clone(),
        bytes: Some(bytes),
        duration_s: Some(elapsed.as_secs_f64()),
        lock_wait_s: Some(waits.own_total()),
        statement: run.statement(),
        note: Some(note),
        writers_blocked_s: Some(waits.others_max),
        ..row(job, m)
    };
    write(&base);
    if run.move_indexes {
        for (oid, name, was, ibytes) in indexes_before {
            if *was == t.to {
                continue;
            }
            let (index_table, index_definition) =
                as_caller(|| Ok::<_, pgrx::spi::Error>(index_identity(pg_sys::Oid::from(*oid))));
            write(&Relocation {
                relation: *oid,
                relation_name: name.clone(),
                kind: "index".into(),
                index_table,
                index_definition,
                from_tablespace: was.clone(),
                bytes: Some(*ibytes),
                duration_s: None,
                lock_wait_s: None,
                note: Some(format!(
                    "rebuilt online in {} by the pg_repack run of its table {} (--moveidx): its time is that row's",
                    t.to, t.name
                )),
                writers_blocked_s: None,
                ..base.clone()
            });
        }
    }
}
