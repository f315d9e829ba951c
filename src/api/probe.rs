//! `storlab.probe()`: one measured workload on one tablespace (or the WAL
//! folder), stored as a row of `storlab.probes`. The measuring itself is the
//! pure engine in `crate::probe`; this module resolves names, checks space,
//! keeps cancel working and stores the result.

use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pgrx::datum::{Interval, JsonB};
use pgrx::heap_tuple::PgHeapTuple;
use pgrx::prelude::*;
use pgrx::{AllocatedByRust, GucContext, GucFlags, GucRegistry, GucSetting};

use crate::ops::identity::as_owner;
use super::name::Name;
use super::probe_args::{self, ProbeArgs, RawProbeArgs};
use super::tablespaces::{all_targets, Target};
use crate::env;
use crate::probe::{self as engine, ProbeError, ProbeSpec};

pub static MAX_PROBE_DURATION_S: GucSetting<i32> = GucSetting::<i32>::new(300);
pub static MIN_FREE_BYTES: GucSetting<i32> = GucSetting::<i32>::new(64 * 1024 * 1024);
pub static SUITE_FILE_KB: GucSetting<i32> = GucSetting::<i32>::new(256 * 1024);

pub fn init_gucs() {
    GucRegistry::define_int_guc(
        c"storlab.max_probe_duration",
        c"Longest duration one storlab probe may run.",
        c"Guards a production server against a probe started with a mistaken duration.",
        &MAX_PROBE_DURATION_S,
        1,
        24 * 3600,
        GucContext::Suset,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_int_guc(
        c"storlab.min_free_bytes",
        c"Free space a probe must leave on the filesystem it writes to.",
        c"A probe refuses to start (SQLSTATE 53100) when its scratch file plus this reserve does not fit.",
        &MIN_FREE_BYTES,
        0,
        i32::MAX,
        GucContext::Suset,
        GucFlags::UNIT_BYTE,
    );
    GucRegistry::define_int_guc(
        c"storlab.suite_file_size",
        c"Largest scratch file profile() and compare_tablespaces() write per probe.",
        c"They use the smaller of this and a quarter of the free space. Larger files defeat device caches better; smaller ones finish sooner and disturb a busy volume less.",
        &SUITE_FILE_KB,
        1024,
        i32::MAX,
        GucContext::Suset,
        GucFlags::UNIT_KB,
    );
}

pub fn suite_file_cap() -> u64 {
    SUITE_FILE_KB.get().max(1024) as u64 * 1024
}

pub fn max_probe_duration() -> Duration {
    Duration::from_secs(MAX_PROBE_DURATION_S.get().max(1) as u64)
}

fn min_free_bytes() -> u64 {
    MIN_FREE_BYTES.get().max(0) as u64
}

/// Scratch folders this backend has written to. A backend that leaves through
/// FATAL (pg_terminate_backend, a fast shutdown) exits without unwinding, so
/// the engine's guards never run: an exit callback removes our files instead.
static SCRATCH_DIRS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

unsafe extern "C-unwind" fn remove_scratch_at_exit(_code: std::ffi::c_int, _arg: pg_sys::Datum) {
    if let Ok(dirs) = SCRATCH_DIRS.lock() {
        for dir in dirs.iter() {
            let _ = engine::remove_own(dir);
        }
    }
}

fn remember_scratch_dir(dir: &std::path::Path) {
    let mut dirs = SCRATCH_DIRS.lock().unwrap_or_else(|e| e.into_inner());
    if dirs.is_empty() {
        // SAFETY: registers a plain function once per backend, from its main thread.
        unsafe { pg_sys::before_shmem_exit(Some(remove_scratch_at_exit), pg_sys::Datum::from(0)) };
    }
    if !dirs.iter().any(|d| d == dir) {
        dirs.push(dir.to_path_buf());
    }
}

/// WAL needs room to grow: a probe of pg_wal also leaves max_wal_size free,
/// since ENOSPC while writing WAL is a PANIC that restarts the whole server.
fn wal_reserve_bytes() -> u64 {
    Spi::get_one::<i64>(
        "SELECT pg_catalog.pg_size_bytes(pg_catalog.current_setting('max_wal_size'))",
    )
    .ok()
    .flatten()
    .unwrap_or(1 << 30)
    .max(0) as u64
}

/// An error that a single probe raises, and that a suite turns into a WARNING
/// so that one unusable tablespace never fails a whole comparison.
#[derive(Debug, Clone)]
pub struct Failure {
    pub code: PgSqlErrorCode,
    pub message: String,
    /// Figures that vary from run to run go here, so the message stays stable.
    pub detail: Option<String>,
}

impl Failure {
    pub fn new(code: PgSqlErrorCode, message: impl Into<String>) -> Self {
        Failure {
            code,
            message: message.into(),
            detail: None,
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn raise(self) -> ! {
        if let Some(detail) = self.detail {
            ereport!(ERROR, self.code, self.message, detail);
        }
        ereport!(ERROR, self.code, self.message);
    }
}

pub fn invalid(message: impl Into<String>) -> Failure {
    Failure::new(PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE, message)
}

/// A tablespace name, or 'pg_wal', to the folder storlab measures.
pub fn resolve(name: &str) -> Result<Target, Failure> {
    if name == "pg_global" {
        return Err(invalid(
            "storlab does not probe pg_global: it holds only shared catalogs and nothing of ours is written there",
        ));
    }
    all_targets()
        .into_iter()
        .find(|t| t.name == name)
        .ok_or_else(|| {
            Failure::new(
                PgSqlErrorCode::ERRCODE_UNDEFINED_OBJECT,
                format!("tablespace \"{name}\" does not exist"),
            )
        })
}

/// Where a probe's scratch file goes: the tablespace's own temp folder (the
/// postmaster removes `pgsql_tmp*` files there at restart, base backups skip
/// them, and DROP TABLESPACE is never blocked by a database folder of ours).
/// The WAL folder has none: the file goes in pg_wal itself and stale ones are
/// removed at the next probe.
pub fn scratch_dir(target: &Target) -> PathBuf {
    match target.kind {
        "wal" => target.folder.clone(),
        _ => target.folder.join("pgsql_tmp"),
    }
}

pub fn facts_json(target: &Target) -> serde_json::Value {
    match env::facts(&target.folder) {
        Ok(f) => serde_json::json!({
            "kind": target.kind,
            "location": f.location,
            "fs_type": f.fs_type,
            "mount_point": f.mount_point,
            "mount_options": f.mount_options,
            "device": f.device,
            "rotational": f.rotational,
            "fs_bytes": f.fs_bytes,
            "free_bytes": f.free_bytes,
            "direct_io": f.direct_io,
        }),
        Err(e) => {
            serde_json::json!({ "kind": target.kind, "location": target.folder, "error": e.to_string() })
        }
    }
}

pub fn hostname() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: gethostname writes at most buf.len() bytes into our buffer.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return String::new();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    String::from_utf8_lossy(&buf[..end]).into_owned()
}

pub fn system_identifier() -> i64 {
    // SAFETY: reads the control file copy in shared memory, set at startup.
    unsafe { pg_sys::GetSystemIdentifier() as i64 }
}

/// Checks the free space, runs the engine and stores one row; returns its id.
/// `suite` marks rows of the standard suite ('standard') and of fsync_cost
/// ('fsync_cost'), so that comparisons never pick up an ad-hoc probe.
pub fn measure(
    target: &Target,
    spec: ProbeSpec,
    label: Option<&str>,
    suite: Option<&str>,
) -> Result<i64, Failure> {
    let dir = scratch_dir(target);
    let space = env::space::fs_space(&target.folder).map_err(|e| {
        Failure::new(
            PgSqlErrorCode::ERRCODE_IO_ERROR,
            format!(
                "cannot read the free space of {}: {e}",
                target.folder.display()
            ),
        )
    })?;
    let wal_reserve = if target.kind == "wal" {
        wal_reserve_bytes()
    } else {
        0
    };
    let need = spec.file_size + min_free_bytes() + wal_reserve;
    if space.avail_bytes < need {
        return Err(Failure::new(
            PgSqlErrorCode::ERRCODE_DISK_FULL,
            format!("not enough free space for a probe on {}", target.name),
        )
        .with_detail(format!(
            "{} bytes free at {}, {} needed: file_size {} + storlab.min_free_bytes {}{}.",
            space.avail_bytes,
            target.folder.display(),
            need,
            spec.file_size,
            min_free_bytes(),
            if wal_reserve > 0 {
                format!(" + max_wal_size {wal_reserve}")
            } else {
                String::new()
            }
        )));
    }
    // Files of ours whose backend died: the postmaster cleans tablespace temp
    // folders only at restart, and pg_wal never.
    let _ = engine::remove_stale(&dir);
    remember_scratch_dir(&dir);

    let env = facts_json(target);
    let started = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64();
    // The engine's threads do the I/O; this (the backend's only PostgreSQL
    // thread) polls for cancel and statement_timeout. A pending cancel raises
    // its ERROR right here; the engine's guards stop the workers and remove
    // the scratch file while that error unwinds.
    let mut poll = || {
        pg_sys::check_for_interrupts!();
        false
    };
    let result = engine::run_probe(&spec, &mut poll).map_err(|e| match e {
        ProbeError::InvalidSpec(m) => invalid(m),
        ProbeError::DiskFull(m) => Failure::new(PgSqlErrorCode::ERRCODE_DISK_FULL, m),
        ProbeError::Cancelled => {
            Failure::new(PgSqlErrorCode::ERRCODE_QUERY_CANCELED, "probe cancelled")
        }
        e @ ProbeError::Io { .. } => Failure::new(
            PgSqlErrorCode::ERRCODE_IO_ERROR,
            format!("probe on {} failed: {e}", target.name),
        ),
    })?;
    for notice in &result.notices {
        notice!("storlab: {notice}");
    }

    let h = &result.histogram;
    let secs = result.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
    let (lat_mean, p50, p90, p99, p999, max) = if h.count() == 0 {
        (None, None, None, None, None, None)
    } else {
        (
            Some(h.mean_us()),
            Some(h.percentile_us(50.0)),
            Some(h.percentile_us(90.0)),
            Some(h.percentile_us(99.0)),
            Some(h.percentile_us(99.9)),
            Some(h.max_us()),
        )
    };
    let histogram = h
        .to_bytes()
        .map_err(|e| Failure::new(PgSqlErrorCode::ERRCODE_INTERNAL_ERROR, e.to_string()))?;
    let location = dir.display().to_string();
    let id = as_owner(|| {
        Spi::connect_mut(|c| {
        c.update(
            "INSERT INTO storlab.probes (tablespace, location, workload, block_size, workers, direct, sync_method,
                 writes_per_sync, file_size, duration_s, ops, bytes, iops, mib_s, lat_mean_us, lat_p50_us,
                 lat_p90_us, lat_p99_us, lat_p999_us, lat_max_us, histogram, env, label, system_identifier,
                 hostname, started_at, suite)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
                     $21, $22, $23, $24, $25, to_timestamp($26), $27)
             RETURNING id",
            None,
            &[
                Name(target.name.clone()).into(),
                location.into(),
                spec.workload.as_str().into(),
                (spec.block_size as i32).into(),
                (spec.workers as i32).into(),
                result.direct.into(),
                spec.sync.as_str().into(),
                (spec.writes_per_sync as i32).into(),
                (spec.file_size as i64).into(),
                secs.into(),
                (result.ops as i64).into(),
                (result.bytes as i64).into(),
                (result.ops as f64 / secs).into(),
                (result.bytes as f64 / secs / (1024.0 * 1024.0)).into(),
                lat_mean.into(),
                p50.into(),
                p90.into(),
                p99.into(),
                p999.into(),
                max.into(),
                histogram.into(),
                JsonB(env).into(),
                label.map(str::to_owned).into(),
                system_identifier().into(),
                hostname().into(),
                started.into(),
                suite.map(str::to_owned).into(),
            ],
        )?
        .first()
        .get_one::<i64>()
    })
    .unwrap_or_else(|e| error!("could not store the probe: {e}"))
    .expect("INSERT ... RETURNING id returns the id")
    });
    Ok(id)
}

pub type ProbeRow = PgHeapTuple<'static, AllocatedByRust>;

/// The stored rows, in id order, as values of the table's row type.
pub fn fetch_rows(ids: &[i64]) -> Vec<ProbeRow> {
    as_owner(|| {
        Spi::connect(|c| {
            c.select(
                "SELECT p FROM storlab.probes p WHERE p.id = ANY($1) ORDER BY p.id",
                None,
                &[ids.to_vec().into()],
            )?
            .map(|row| row.get::<ProbeRow>(1).map(|t| t.expect("a stored row")))
            .collect::<Result<Vec<_>, _>>()
        })
        .unwrap_or_else(|e| error!("could not read the stored probes: {e}"))
    })
}

pub fn required<T>(value: Option<T>, what: &str) -> T {
    value.unwrap_or_else(|| {
        ereport!(
            ERROR,
            PgSqlErrorCode::ERRCODE_NULL_VALUE_NOT_ALLOWED,
            format!("{what} must not be NULL")
        );
    })
}

pub fn interval_micros(i: &Interval) -> i64 {
    i64::try_from(i.as_micros()).unwrap_or(i64::MAX)
}

pub fn spec_for(target: &Target, a: &ProbeArgs, direct: bool) -> ProbeSpec {
    ProbeSpec {
        dir: scratch_dir(target),
        workload: a.workload,
        block_size: a.block_size,
        duration: a.duration,
        workers: a.workers,
        file_size: a.file_size,
        direct,
        sync: a.sync,
        writes_per_sync: 1,
        rewind: false,
    }
}

/// Measure one workload on one tablespace (or 'pg_wal') and store the result
/// in storlab.probes; returns the stored row.
#[allow(clippy::too_many_arguments)]
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn probe(
    tablespace: Option<Name>,
    workload: default!(Option<String>, "'randread'"),
    block_size: default!(Option<i32>, 8192),
    duration: default!(Option<Interval>, "'5 seconds'"),
    workers: default!(Option<i32>, 1),
    file_size: default!(Option<i64>, 268435456),
    direct: default!(Option<bool>, true),
    sync_method: default!(Option<String>, "NULL"),
    label: default!(Option<String>, "NULL"),
) -> pgrx::composite_type!('static, "probes") {
    let tablespace = required(tablespace, "tablespace");
    let workload = required(workload, "workload");
    let raw = RawProbeArgs {
        workload: &workload,
        block_size: required(block_size, "block_size") as i64,
        duration_us: interval_micros(&required(duration, "duration")),
        workers: required(workers, "workers") as i64,
        file_size: required(file_size, "file_size"),
        sync_method: sync_method.as_deref(),
    };
    let args = probe_args::check(&raw, max_probe_duration()).unwrap_or_else(|m| invalid(m).raise());
    let target = resolve(tablespace.as_str()).unwrap_or_else(|f| f.raise());
    let spec = spec_for(&target, &args, required(direct, "direct"));
    let id = measure(&target, spec, label.as_deref(), None).unwrap_or_else(|f| f.raise());
    fetch_rows(&[id]).pop().expect("the row just stored")
}
