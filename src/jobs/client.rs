//! The client programs a job runs over a connection to its own server, as
//! the job's role: pgbench, psql (statements that must run at top level:
//! REINDEX CONCURRENTLY, VACUUM) and pg_repack, from the server's own bin
//! folder, each in a process group of its own and stopped on a stop
//! request.

use std::ffi::CStr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use pgrx::prelude::*;

use super::job::{bookkeeping, Job, JobEnd};
use super::stop::stop_requested;
use crate::ops::read;
use storlab_core::pgbench;
use storlab_core::pgbench::process::{self, Outcome};
use storlab_core::pgbench::{conninfo, Connection};

/// pgbench of the server's own version, from the server's bin folder.
pub(super) fn pgbench_path() -> PathBuf {
    // SAFETY: my_exec_path is set at startup to the postgres executable.
    let exe = unsafe { CStr::from_ptr((&raw const pg_sys::my_exec_path).cast()) }
        .to_string_lossy()
        .into_owned();
    Path::new(&exe).with_file_name("pgbench")
}

/// A client program of the server's own version (pg_repack), from the
/// server's bin folder.
pub(super) fn server_program(name: &str) -> PathBuf {
    pgbench_path().with_file_name(name)
}

/// How pgbench reaches this server: its own socket folder and port, the
/// job's database and role.
pub(super) fn connection(job: &Job) -> Connection {
    // server facts storlab needs to connect, not the caller's to read
    // (unix_socket_directories needs pg_read_all_settings)
    let (sockets, port) = bookkeeping(|| {
        read::two::<String, String>(
            "SELECT pg_catalog.current_setting('unix_socket_directories'), pg_catalog.current_setting('port')", &[],
        )
    });
    let host = sockets.and_then(|s| {
        s.split(',')
            .map(str::trim)
            .find(|s| !s.is_empty())
            .map(String::from)
    });
    let mut conn = Connection {
        host: Some(host.unwrap_or_else(|| "127.0.0.1".into())),
        port: port.and_then(|p| p.parse().ok()),
        user: Some(job.role.clone()),
        dbname: job.database.clone(),
    };
    // storlab.conninfo as the caller had it (checked when the job started)
    if let Some(c) = &job.args.conninfo {
        if let Ok(Some(passfile)) = conninfo::apply(&mut conn, c) {
            // SAFETY: the worker is single-threaded; its children inherit this
            unsafe { std::env::set_var("PGPASSFILE", passfile) };
        }
    }
    conn
}

/// Runs `f` (which starts a client program) with PGOPTIONS set to
/// `pgoptions`, and only then.
pub(super) fn with_pgoptions<R>(pgoptions: Option<&str>, f: impl FnOnce() -> R) -> R {
    match pgoptions {
        Some(options) => with_env("PGOPTIONS", options, f),
        None => f(),
    }
}

/// Runs `f` with an environment variable set for the client programs it
/// starts, and only then.
pub(super) fn with_env<R>(name: &str, value: &str, f: impl FnOnce() -> R) -> R {
    // SAFETY: the worker is single-threaded; only its children read this
    unsafe { std::env::set_var(name, value) };
    let out = f();
    // SAFETY: as above
    unsafe { std::env::remove_var(name) };
    out
}

/// What a finished client program printed.
pub(super) struct Output {
    pub stdout: String,
    pub stderr: String,
}

/// Runs a client program of the server's own bin folder for the job; what
/// it printed, or why it failed (its stderr) or was stopped.
pub(super) fn run_program(
    job: &Job,
    program: &Path,
    args: &[std::ffi::OsString],
    dir: &Path,
    deadline: Duration,
) -> Result<Output, JobEnd> {
    run_program_with(program, args, dir, deadline, &mut || stop_requested(job.id))
}

/// [`run_program`], stopped when `stop` says (or at `deadline`).
fn run_program_with(
    program: &Path,
    args: &[std::ffi::OsString],
    dir: &Path,
    deadline: Duration,
    stop: &mut dyn FnMut() -> Option<String>,
) -> Result<Output, JobEnd> {
    std::fs::create_dir_all(dir)
        .map_err(|e| JobEnd::Failed(format!("cannot create {}: {e}", dir.display())))?;
    let out = process::run(program, args, dir, deadline, stop)
        .map_err(|e| JobEnd::Failed(format!("cannot run {}: {e}", program.display())))?;
    let stdout = std::fs::read_to_string(dir.join("stdout")).unwrap_or_default();
    let stderr = std::fs::read_to_string(dir.join("stderr")).unwrap_or_default();
    match out {
        Outcome::Exited(s) if s.success() => Ok(Output { stdout, stderr }),
        // the cause first: pgbench -i prints its progress before it
        Outcome::Exited(s) => Err(JobEnd::Failed(format!(
            "{} exited with {}: {}",
            program.file_name().unwrap_or_default().to_string_lossy(),
            s.code()
                .map_or("a signal".to_string(), |c| format!("status {c}")),
            pgbench::cause_first(&stderr)
        ))),
        Outcome::Stopped(why) => Err(JobEnd::Stopped(why)),
    }
}

/// Statements that must run at top level (REINDEX ... CONCURRENTLY cannot run
/// in a transaction block, so not through SPI) go over a client connection.
pub(super) fn psql(job: &Job, conn: &Connection, sql: &str, dir: &Path) -> Result<String, JobEnd> {
    psql_with(job, conn, &[sql], dir, &[])
}

/// psql with several `-c` commands in one session, each a statement or one
/// backslash command (`\timing on` before a statement prints its duration).
pub(super) fn psql_commands(
    job: &Job,
    conn: &Connection,
    commands: &[&str],
    dir: &Path,
) -> Result<String, JobEnd> {
    psql_with(job, conn, commands, dir, &[])
}

/// [`psql_commands`], `watch` called every quarter of a second or so while
/// psql runs (it looks at what the statement waits for).
pub(super) fn psql_commands_watched(
    job: &Job,
    conn: &Connection,
    commands: &[&str],
    dir: &Path,
    watch: &mut dyn FnMut(),
) -> Result<String, JobEnd> {
    let args = psql_args(conn, commands, &[]);
    let psql = pgbench_path().with_file_name("psql");
    run_program_with(
        &psql,
        &args,
        dir,
        Duration::from_secs(24 * 3600),
        &mut || {
            watch();
            stop_requested(job.id)
        },
    )
    .map(|o| o.stdout)
}

/// psql as [`psql_commands`] runs it, for a statement that tidies after a
/// stop (its own lock_timeout bounds its waits): a stop request, which
/// would end it before it did anything once the job is stopping, does not
/// cut it short; `deadline` does.
pub(super) fn psql_tidying(
    conn: &Connection,
    commands: &[&str],
    dir: &Path,
    deadline: Duration,
) -> Result<String, JobEnd> {
    let args = psql_args(conn, commands, &[]);
    let psql = pgbench_path().with_file_name("psql");
    run_program_with(&psql, &args, dir, deadline, &mut || {
        std::thread::sleep(Duration::from_millis(10));
        None
    })
    .map(|o| o.stdout)
}

/// psql as [`psql`] runs it: `commands` as its `-c`s in one session, with
/// more options (`-A -t`: bare values).
pub(super) fn psql_with(
    job: &Job,
    conn: &Connection,
    commands: &[&str],
    dir: &Path,
    options: &[&str],
) -> Result<String, JobEnd> {
    let psql = pgbench_path().with_file_name("psql");
    let args = psql_args(conn, commands, options);
    run_program(job, &psql, &args, dir, Duration::from_secs(24 * 3600)).map(|o| o.stdout)
}

/// psql's arguments: quiet, stopping at the first error, the connection,
/// `options`, then `commands` as its `-c`s.
fn psql_args(conn: &Connection, commands: &[&str], options: &[&str]) -> Vec<std::ffi::OsString> {
    let mut args: Vec<std::ffi::OsString> = vec![
        "-X".into(),
        "-q".into(),
        "-v".into(),
        "ON_ERROR_STOP=1".into(),
    ];
    args.extend(options.iter().map(std::ffi::OsString::from));
    if let Some(h) = &conn.host {
        args.push(format!("--host={h}").into());
    }
    if let Some(p) = conn.port {
        args.push(format!("--port={p}").into());
    }
    if let Some(u) = &conn.user {
        args.push(format!("--username={u}").into());
    }
    // spelled as a connection string, so that a database name is never taken for one
    args.push(format!("--dbname=dbname={}", conninfo::quote(&conn.dbname)).into());
    for c in commands {
        args.push("-c".into());
        args.push(c.into());
    }
    args
}
