//! pg_repack's objects a job left on a table (a session's lock kept
//! them): noted during the job, removed by its worker after the job's end,
//! once the sessions that held a lock on the table let go.

use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

use pgrx::prelude::*;

use super::leftovers::{drop_attempt, leftovers, repack_running};
use super::shared::chrono_now;
use crate::jobs::client::connection;
use crate::jobs::job::{as_caller, bookkeeping, store_detail, Job};
use crate::jobs::stop::wait_signalled;
use crate::ops::read;
use storlab_core::repack::outcome::TIDY_FOR;
use storlab_core::request::relocate::OnlineTable;

thread_local! {
    /// The tables whose pg_repack objects this job left: removed after
    /// the job's end, by [`tidy_after_end`].
    static TIDY: std::cell::RefCell<Vec<(u32, String)>> = const { std::cell::RefCell::new(Vec::new()) };
}

pub(super) fn tidy_later(t: &OnlineTable) {
    TIDY.with(|v| {
        let mut v = v.borrow_mut();
        if !v.iter().any(|(r, _)| *r == t.relation) {
            v.push((t.relation, t.name.clone()));
        }
    });
}

/// After the job's end, which reported pg_repack's objects left on a table
/// (a session's lock kept them), the worker removes them as soon as the
/// sessions that held a lock on the table at the last attempt have ended
/// their transactions: it reads pg_locks once a second meanwhile and makes
/// no attempt (each queues the table's writers for up to 100 ms) while one
/// of them is still open. It gives up after [`TIDY_FOR`], when another
/// online move of the table is queued or runs (which removes them first),
/// when a pg_repack runs on it, or when the worker is told to stop. Each
/// table's outcome is in the job's detail (key `tidy`).
pub(in crate::jobs) fn tidy_after_end(job: &Job, dir: &Path) {
    let mut pending = TIDY.with(|v| std::mem::take(&mut *v.borrow_mut()));
    if pending.is_empty() {
        return;
    }
    let conn = connection(job);
    let start = Instant::now();
    let mut said = serde_json::Map::new();
    let mut say = |name: &str, what: String| {
        said.insert(name.to_string(), what.into());
        store_detail(job, serde_json::json!({ "tidy": said.clone() }));
    };
    // per table: the transactions holding a lock on it at the last attempt
    let mut holders: HashMap<u32, Vec<String>> = HashMap::new();
    for (_, name) in &pending {
        say(
            name,
            "pg_repack's objects are left: removed once the sessions holding a lock on the table let go".into(),
        );
    }
    loop {
        pending.retain(|(relation, name)| {
            let oid = pg_sys::Oid::from(*relation);
            if leftovers(oid).is_empty() {
                say(
                    name,
                    format!("pg_repack's objects are gone at {}", chrono_now()),
                );
                return false;
            }
            if let Some(other) = other_online_move(job, *relation) {
                say(
                    name,
                    format!("left to {other}, which removes them before it moves the table"),
                );
                return false;
            }
            if let Some(pid) = repack_running(oid) {
                say(
                    name,
                    format!("left alone: a pg_repack runs on the table (backend pid {pid})"),
                );
                return false;
            }
            if holders.get(relation).is_some_and(|h| still_open(h)) {
                return true;
            }
            if drop_attempt(&conn, dir, oid) && leftovers(oid).is_empty() {
                say(
                    name,
                    format!("pg_repack's objects removed at {}", chrono_now()),
                );
                return false;
            }
            holders.insert(*relation, holding_transactions(oid));
            true
        });
        if pending.is_empty() {
            return;
        }
        let stop = if start.elapsed() >= TIDY_FOR {
            Some(format!("still there after {} min", TIDY_FOR.as_secs() / 60))
        } else if wait_signalled(Duration::from_secs(1)) {
            Some("the worker was told to stop".to_string())
        } else {
            None
        };
        if let Some(why) = stop {
            for (relation, name) in &pending {
                say(
                    name,
                    format!(
                        "{why}: pg_repack's objects are left ({}); the next online move of the table removes them first, or SELECT repack.repack_drop('{}'::regclass, 4)",
                        leftovers(pg_sys::Oid::from(*relation)).join(", "),
                        name.replace('\'', "''")
                    ),
                );
            }
            return;
        }
    }
}

/// The transactions (virtual transaction ids) holding a lock on the table
/// now, other than the worker's own.
fn holding_transactions(oid: pg_sys::Oid) -> Vec<String> {
    as_caller(|| {
        read::one::<Vec<String>>(
            "SELECT ARRAY(SELECT DISTINCT l.virtualtransaction FROM pg_catalog.pg_locks l
                           WHERE l.locktype = 'relation' AND l.relation = $1 AND l.granted
                             AND l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid()
                             AND l.database = (SELECT d.oid FROM pg_catalog.pg_database d
                                                WHERE d.datname = pg_catalog.current_database()))",
            &[oid.into()],
        )
    })
    .unwrap_or_default()
}

/// Is one of these transactions still open?
fn still_open(transactions: &[String]) -> bool {
    as_caller(|| {
        read::one::<bool>(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_locks l WHERE l.virtualtransaction = ANY ($1))",
            &[transactions.to_vec().into()],
        )
    })
    .unwrap_or(false)
}

/// Another online move of the table, queued or running: it removes what
/// pg_repack left before it runs pg_repack.
fn other_online_move(job: &Job, relation: u32) -> Option<String> {
    bookkeeping(|| {
        read::one::<String>(
            "SELECT (SELECT pg_catalog.format('storlab job %s', j.id)
                       FROM storlab.jobs j
                      WHERE j.kind = 'move_online' AND j.status IN ('queued', 'running', 'cancelling')
                        AND j.id <> $2 AND j.database = pg_catalog.current_database()
                        AND j.args->'tables' @> pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object('relation', $1::int8))
                      ORDER BY j.id LIMIT 1)",
            &[i64::from(relation).into(), job.id.into()],
        )
    })
}
