//! Starting and resuming experiments. The request was checked on its own
//! (`request::experiment`); here it is checked against the catalog, as the
//! caller, before anything runs or moves: every tablespace exists and the
//! caller may create in it, every setting is one a session may change to
//! that value. Then one job (kind `experiment`) does the work
//! (`jobs::experiment`), and its row in storlab.experiment_records says
//! where it stands.

use std::ffi::CString;

use pgrx::prelude::*;

use super::error::{invalid, spi, Error, OrRaise, Raise, SqlState};
use super::identity::{self, as_owner};
use super::jobs;
use super::record;
use super::relocate::check_target;
use super::report;
use super::server::{hostname, system_identifier};
use crate::sqltypes::Name;
use storlab_core::record::{ExperimentRecord, Record};
use storlab_core::report::sequential;
use storlab_core::request::experiment::{Experiment, Placement};
use storlab_core::request::job::JobSpec;

/// Checks the experiment against the catalog, starts its job and records
/// it; returns its id (the job's).
pub fn start(mut e: Experiment) -> i64 {
    // a part a layout omits has one stated place for every run of it
    let default_tablespace = Spi::get_one_with_args::<String>(
        "SELECT t.spcname::text FROM pg_catalog.pg_database d
           JOIN pg_catalog.pg_tablespace t ON t.oid = d.dattablespace
          WHERE d.datname = pg_catalog.current_database()",
        &[],
    )
    .map_err(spi("reading the database's default tablespace"))
    .or_raise()
    .unwrap_or_else(|| "pg_default".into());
    let filled = e.resolve_omitted_parts(&default_tablespace);
    for layout in &e.layouts {
        check_placement(&layout.name, &layout.placement);
    }
    e.run = jobs::checkpoint_option(e.run.clone());
    let baseline = e.layouts[0].name.clone();
    if e.layouts.len() > 1 {
        // jsonb orders an object's keys shorter first, not as typed: say
        // which one came first (an array of layouts, or options.baseline,
        // chooses it)
        pgrx::notice!(
            "storlab: layout \"{baseline}\" is the baseline: the others are compared with it"
        );
    }
    let name = e.name.clone();
    let steps_total = e.steps().len() as i32;
    let id = jobs::start(JobSpec::Experiment(e));
    // said once the experiment is started (not before a refusal)
    for r in filled {
        if r.part == "wal" {
            pgrx::notice!(
                "storlab: layout \"{}\" names no place for pg_wal: every run of it needs pg_wal on {}'s filesystem, {}",
                r.layout,
                r.tablespace,
                r.from
            );
        } else {
            pgrx::notice!(
                "storlab: layout \"{}\" names no tablespace for its {}: every run of it has them in {}, {}",
                r.layout,
                r.part,
                r.tablespace,
                r.from
            );
        }
    }
    let record = ExperimentRecord {
        id,
        name,
        steps_total,
        current_action: Some("queued".into()),
        system_identifier: system_identifier(),
        hostname: hostname(),
    };
    as_owner(|| {
        Spi::run_with_args(
            &record::insert_sql(&record, &[])?,
            &[pgrx::JsonB(record.to_json()).into()],
        )
    })
    .map_err(spi("recording the experiment"))
    .or_raise();
    id
}

/// Continues a failed or cancelled experiment, one that stopped where its
/// next run needs pg_wal elsewhere (wal_needed), or a finished one with
/// invalid measured runs (moved under, a setting changed): the same job
/// again, which skips the valid runs already measured and measures the
/// others (and stops again if pg_wal has not moved). Returns its id.
pub fn resume(experiment_id: i64) -> i64 {
    let done_may_go_on = as_owner(|| {
        let (waits_for_wal, sequential) = Spi::get_two_with_args::<bool, bool>(
            "SELECT EXISTS (SELECT FROM storlab.experiment_records WHERE id = $1 AND wal_needed IS NOT NULL),
                    (SELECT j.args ? 'stop' FROM storlab.job_records j WHERE j.id = $1 AND j.kind = 'experiment')",
            &[experiment_id.into()],
        )?;
        let Some(sequential) = sequential else {
            // no such experiment: jobs::restart names what there is
            return Ok(false);
        };
        let e = report::experiment_of(experiment_id);
        // a sequential experiment has fewer runs than its maximum once
        // answered: it may go on only where its job would run something (a
        // comparison still open, or a run that was invalid); a fixed one
        // where a cell and repetition has no pooled run (a finished job
        // measured every one: one was left out, by its observations or
        // its conditions)
        let more = if sequential {
            sequential::runs_left(&e, &report::sequential_runs(experiment_id, &e))
        } else {
            let judged = report::judged_runs(experiment_id, &e);
            let filled: std::collections::HashSet<_> = judged
                .iter()
                .filter(|(_, why)| why.is_none())
                .map(|(r, _)| r.slot())
                .collect();
            filled.len() < e.layouts.len() * e.clients.len() * e.fillfactors.len() * e.repetitions as usize
        };
        Ok(waits_for_wal == Some(true) || more)
    })
    .map_err(spi("reading the experiment"))
    .or_raise();
    jobs::restart(experiment_id, "experiment", done_may_go_on);
    as_owner(|| {
        Spi::run_with_args(
            "UPDATE storlab.experiment_records SET current_action = 'queued again to resume', wal_needed = NULL WHERE id = $1",
            &[experiment_id.into()],
        )
    })
    .map_err(spi("recording the resume"))
    .or_raise();
    experiment_id
}

fn check_placement(layout: &str, p: &Placement) {
    for ts in [&p.tables, &p.indexes, &p.temp].into_iter().flatten() {
        check_target(ts).or_raise();
    }
    for (name, value) in &p.settings {
        check_setting(layout, name, value);
    }
    // only a filesystem is named: the tablespace must exist, nothing is created in it
    if let Some(wal) = &p.wal {
        let found = Spi::get_one_with_args::<bool>(
            "SELECT EXISTS (SELECT FROM pg_catalog.pg_tablespace WHERE spcname = $1)",
            &[Name(wal.clone()).into()],
        )
        .map_err(spi("reading pg_tablespace"))
        .or_raise();
        if found != Some(true) {
            Error::new(
                SqlState::UndefinedObject,
                format!("tablespace \"{wal}\" does not exist"),
            )
            .with_detail(format!(
                "Layout \"{layout}\" names it for \"wal\": its runs need pg_wal on that tablespace's filesystem."
            ))
            .raise();
        }
    }
}

/// A setting pgbench's sessions will be given: one a session may change
/// (context user, or superuser for a superuser), to a value the server
/// accepts; checked here so that a typo fails the call, not the job an
/// hour later.
fn check_setting(layout: &str, name: &str, value: &str) {
    let context = Spi::get_one_with_args::<String>(
        "SELECT (SELECT context FROM pg_catalog.pg_settings WHERE name = pg_catalog.lower($1))",
        &[name.into()],
    )
    .map_err(spi("reading pg_settings"))
    .or_raise();
    let superuser = identity::is_superuser(identity::current_user());
    fn refuse(layout: &str, name: &str, why: String) -> ! {
        invalid(format!("layout \"{layout}\": setting {name} {why}")).raise()
    }
    match context.as_deref() {
        None => refuse(layout, name, "is not a configuration parameter of this server".into()),
        Some("user") => {}
        Some("superuser") if superuser => {}
        Some("superuser") => refuse(layout, name, "can be changed by superusers only".into()),
        Some(c) => refuse(layout, name, format!(
            "cannot be changed by a session (its context is {c}): change it in postgresql.conf, and compare servers instead"
        )),
    }
    let (Ok(cname), Ok(cvalue)) = (CString::new(name), CString::new(value)) else {
        refuse(layout, name, "contains a zero byte".into())
    };
    let guc_context = if superuser {
        pg_sys::GucContext::PGC_SUSET
    } else {
        pg_sys::GucContext::PGC_USERSET
    };
    // changeVal = false: the value is parsed and checked (22023 from the
    // server when it is invalid), nothing is set
    // SAFETY: both strings outlive the call; with changeVal false the
    // function only validates.
    unsafe {
        pg_sys::set_config_option(
            cname.as_ptr(),
            cvalue.as_ptr(),
            guc_context,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_SET,
            false,
            pgrx::PgLogLevel::ERROR as i32,
            false,
        );
    }
}
