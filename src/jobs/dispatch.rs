//! The dispatcher: what each kind of job runs, how it recovers after a
//! crash restart and what it does once it has ended. The one module that
//! knows every job kind; no kind knows this one.

use std::path::PathBuf;

use super::bench;
use super::experiment;
use super::job::{Job, JobEnd};
use super::move_indexes;
use super::move_online;
use crate::ops::server::data_dir;
use storlab_core::request::job::JobSpec;

/// Runs the job's steps, with a folder of its own for their logs.
pub fn run(job: &Job) -> Result<(), JobEnd> {
    let dir = RunDir::new(run_dir(job.id));
    match &job.args.spec {
        JobSpec::BenchInit(r) => bench::init(job, r, &dir.0),
        JobSpec::Bench(r) => bench::run(job, job.id, r, &dir.0, None, None),
        JobSpec::MoveIndexes(r) => move_indexes::run(job, r, &dir.0),
        JobSpec::MoveOnline(m) => move_online::run(job, m, &dir.0),
        JobSpec::Experiment(e) => experiment::run(job, e, &dir.0),
    }
}

/// What a job's worker, started again by the postmaster after a crash
/// restart interrupted the job, does before it marks the job failed: the
/// sentence that says so. Only move_indexes jobs ask to be started again
/// (ops::jobs::launch): a rebuild cut short leaves an invalid index behind.
/// So do move_online jobs: pg_repack cut short leaves its trigger on the
/// table, which logs every write until dropped.
pub fn recover(job: &Job) -> String {
    let dir = RunDir::new(run_dir(job.id));
    let said = "the server restarted (a crash of one of its processes) while the job ran";
    match &job.args.spec {
        JobSpec::MoveIndexes(r) => {
            format!("{said}; {}", move_indexes::recover(job, r, &dir.0))
        }
        JobSpec::MoveOnline(m) => {
            format!("{said}; {}", move_online::recover(job, m, &dir.0))
        }
        _ => said.to_string(),
    }
}

/// What a job's worker does once its job has ended (its status stored, so
/// that CALL storlab.wait returns): an online move removes the pg_repack
/// objects that a session's lock kept it from removing in time, once that
/// session lets go.
pub fn after_end(job: &Job) {
    if matches!(job.args.spec, JobSpec::MoveOnline(_)) {
        let dir = RunDir::new(run_dir(job.id));
        move_online::tidy_after_end(job, &dir.0);
    }
}

/// Where an experiment's relations are as it ends without completing,
/// observed now, for the status text of its row.
pub fn experiment_placement(job_id: i64) -> String {
    experiment::placement_now(job_id)
}

/// The job's folder of logs and scripts, removed however the job ends (an
/// ERROR unwinds through here too).
struct RunDir(PathBuf);

impl RunDir {
    fn new(path: PathBuf) -> Self {
        let _ = std::fs::remove_dir_all(&path);
        RunDir(path)
    }
}

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Logs and scripts go in pg_default's temp folder, named like PostgreSQL's
/// own temp files so that a restart removes whatever a crash left.
fn run_dir(job_id: i64) -> PathBuf {
    data_dir()
        .join("base/pgsql_tmp")
        // job ids are per database, the folder is per server: the pid keeps them apart
        .join(format!(
            "pgsql_tmp_storlab_job_{}_{job_id}",
            std::process::id()
        ))
}
