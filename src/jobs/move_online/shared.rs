//! What every part of the job shares: the cadence of its looks at
//! pg_locks and at its status, the phase shown in its detail, the tables it
//! skips, another session as the job's role sees it, and its rows. Imports
//! none of its siblings.

use std::time::Duration;

use pgrx::prelude::*;
use pgrx::JsonB;

use crate::jobs::job::{as_caller, bookkeeping, store_detail, Job};
use crate::ops::read;
use crate::ops::record;
use crate::ops::server::{hostname, system_identifier};
use storlab_core::record::{Record, Relocation};
use storlab_core::request::relocate::{MoveOnline, OnlineTable, ONLINE_LABEL};

/// How often pg_locks is sampled while pg_repack takes or holds its
/// exclusive lock.
pub(super) const SAMPLE: Duration = Duration::from_millis(20);

/// How often the job's status is read, and pg_locks in the other phases.
pub(super) const QUIET: Duration = Duration::from_millis(250);

/// Said in the job's detail (key `skipped`), never silently.
pub(super) fn note_skipped(job: &Job, t: &OnlineTable, why: &str) {
    bookkeeping(|| {
        Spi::run_with_args(
            "UPDATE storlab.job_records
                SET detail = coalesce(detail, '{}') || pg_catalog.jsonb_build_object('skipped',
                      coalesce(detail->'skipped', '[]') || pg_catalog.jsonb_build_array($2::text))
              WHERE id = $1",
            &[job.id.into(), format!("{}: {why}", t.name).into()],
        )
    });
}

/// A session as the job's role sees it in pg_stat_activity: its pid, kind
/// and application, and its statement when that role may read it (another
/// role's needs pg_read_all_stats: storlab shows no more than its caller
/// could read).
pub(super) fn describe_session(pid: i32) -> String {
    as_caller(|| {
        read::one::<String>(
            "SELECT pg_catalog.format('backend pid %s (%s%s)%s', a.pid, a.backend_type,
                      CASE WHEN a.application_name <> '' THEN ', application ' || a.application_name ELSE '' END,
                      CASE WHEN a.query IS NULL OR a.query = '<insufficient privilege>'
                           THEN ', whose statement role ' || CURRENT_USER || ' may not read (pg_read_all_stats may)'
                           WHEN pg_catalog.length(a.query) > 300 THEN ', running: ' || pg_catalog.left(a.query, 300) || '...'
                           ELSE ', running: ' || a.query END)
               FROM pg_catalog.pg_stat_activity a WHERE a.pid = $1",
            &[pid.into()],
        )
    })
    .unwrap_or_else(|| format!("backend pid {pid} (ended since)"))
}

/// The phase shown in the job's detail, with the table and since when.
pub(super) fn show_phase(job: &Job, t: &OnlineTable, phase: &str) {
    store_detail(
        job,
        serde_json::json!({
            "phase": phase,
            "table": t.name,
            "phase_since": chrono_now(),
        }),
    );
}

pub(super) fn chrono_now() -> String {
    bookkeeping(|| read::one::<String>("SELECT pg_catalog.clock_timestamp()::text", &[]))
        .unwrap_or_default()
}

/// What every row of the job shares: its batch, role, label, server and
/// the batch it undoes; online, and nothing measured yet.
pub(super) fn row(job: &Job, m: &MoveOnline) -> Relocation {
    Relocation {
        batch_id: Some(m.batch),
        moved_by: job.role.clone(),
        label: Some(m.label.clone().unwrap_or_else(|| ONLINE_LABEL.into())),
        system_identifier: system_identifier(),
        hostname: hostname(),
        undoes_batch: m.undoes_batch,
        online: true,
        ..Default::default()
    }
}

pub(super) fn write(r: &Relocation) {
    bookkeeping(|| {
        Spi::run_with_args(
            &record::insert_sql(r, &[("moved_at", "pg_catalog.clock_timestamp()")])?,
            &[JsonB(r.to_json()).into()],
        )
    });
}
