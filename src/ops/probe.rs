//! One measured probe: free-space check, the pure engine in `storlab_core::probe`
//! (its threads do the I/O; this, the backend's only PostgreSQL thread,
//! polls for cancel), and the stored row, written as the extension's owner.

use std::path::PathBuf;
use std::time::SystemTime;

use pgrx::datum::JsonB;
use pgrx::heap_tuple::PgHeapTuple;
use pgrx::prelude::*;
use pgrx::AllocatedByRust;

use super::backend_wait::Backend;
use super::error::{invalid, spi, Error, OrRaise, SqlState};
use super::identity::as_owner;
use super::read;
use super::server::{hostname, system_identifier};
use super::settings::min_free_bytes;
use super::standby;
use super::targets::Target;
use storlab_core::env;
use storlab_core::probe::{self as engine, ProbeError, ProbeSpec};
use storlab_core::record::{self, Record};
use storlab_core::request::probe::ProbeArgs;

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
    read::one::<i64>(
        "SELECT pg_catalog.pg_size_bytes(pg_catalog.current_setting('max_wal_size'))",
        &[],
    )
    .ok()
    .flatten()
    .unwrap_or(1 << 30)
    .max(0) as u64
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

pub(crate) fn facts_json(
    target: &Target,
    facts: &std::io::Result<env::StorageFacts>,
) -> serde_json::Value {
    match facts {
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
            "memory_limit_bytes": env::cgroup::memory_limit(),
            "read_iops_limit": f.throttle.read_iops,
            "write_iops_limit": f.throttle.write_iops,
            "read_bps_limit": f.throttle.read_bps,
            "write_bps_limit": f.throttle.write_bps,
            "description": target.description,
        }),
        Err(e) => {
            serde_json::json!({ "kind": target.kind, "location": target.folder, "error": e.to_string() })
        }
    }
}

/// The free space of the target's filesystem. When it falls short of
/// `need`, the filesystem is asked to settle first (xfs frees a removed
/// file's blocks lazily: right after a large probe the space is there, but
/// not yet counted) and read again, for up to a second.
fn free_space_for(target: &Target, need: u64) -> Result<env::space::FsSpace, Error> {
    let read = || {
        env::space::fs_space(&target.folder).map_err(|e| {
            Error::new(
                SqlState::IoError,
                format!(
                    "cannot read the free space of {}: {e}",
                    target.folder.display()
                ),
            )
        })
    };
    let mut space = read()?;
    for _ in 0..5 {
        if space.avail_bytes >= need {
            break;
        }
        let _ = env::space::settle(&target.folder);
        pg_sys::check_for_interrupts!();
        std::thread::sleep(std::time::Duration::from_millis(200));
        space = read()?;
    }
    Ok(space)
}

/// 53100 unless the target's filesystem has `need` bytes free (after
/// letting it settle); `parts` says what they are made of.
pub(crate) fn ensure_room(
    target: &Target,
    what: &str,
    need: u64,
    parts: &str,
) -> Result<(), Error> {
    let space = free_space_for(target, need)?;
    if space.avail_bytes >= need {
        return Ok(());
    }
    Err(Error::new(
        SqlState::DiskFull,
        format!("not enough free space for {what} on {}", target.name),
    )
    .with_detail(format!(
        "{} bytes free at {}, {need} needed: {parts}.",
        space.avail_bytes,
        target.folder.display()
    )))
}

/// The advisory lock space of "a storlab probe is using this device".
const PROBE_LOCK_CLASS: u32 = 0x5354_4c42; // "STLB"

/// Probes of one volume never overlap: two probes that each fit the free
/// space could together run it out (on a volume holding live data, or pg_wal
/// with its max_wal_size reserve), and each would measure the other. A probe
/// holds a session-level advisory lock on its filesystem's device, in no
/// database (probes from two databases of one cluster share the device), for as long
/// as it runs (released when the guard drops: on return, on ERROR as it
/// unwinds, and by PostgreSQL itself if the backend exits). A second probe
/// waits for it, with a NOTICE naming the holder, bounded by lock_timeout
/// like any lock wait, and cancellable.
pub(crate) struct DeviceLock(pg_sys::LOCKTAG);

impl DeviceLock {
    fn tag(dev: u64) -> pg_sys::LOCKTAG {
        pg_sys::LOCKTAG {
            // Database 0, not MyDatabaseId: a device is shared by every
            // database of the cluster, so the lock must be too (the lock
            // table is the cluster's; pg_locks shows it with database 0).
            locktag_field1: 0,
            locktag_field2: PROBE_LOCK_CLASS,
            locktag_field3: ((dev ^ (dev >> 32)) & 0x7fff_ffff) as u32,
            // 2: the (int4, int4) form, as pg_advisory_lock(int4, int4) spells it
            locktag_field4: 2,
            locktag_type: pg_sys::LockTagType::LOCKTAG_ADVISORY as u8,
            locktag_lockmethodid: pg_sys::USER_LOCKMETHOD as u8,
        }
    }

    pub(crate) fn acquire(target: &Target) -> Result<DeviceLock, Error> {
        let dev = env::space::device_id(&target.folder).map_err(|e| {
            Error::new(
                SqlState::IoError,
                format!("cannot stat {}: {e}", target.folder.display()),
            )
        })?;
        let tag = Self::tag(dev);
        let mode = pg_sys::ExclusiveLock as pg_sys::LOCKMODE;
        // SAFETY: the lock manager, from the backend's main thread.
        let got = unsafe { pg_sys::LockAcquire(&tag, mode, true, true) };
        if got == pg_sys::LockAcquireResult::LOCKACQUIRE_NOT_AVAIL {
            let holders = read::one::<String>(
                "SELECT pg_catalog.string_agg(pid::text, ', ') FROM pg_catalog.pg_locks
                  WHERE locktype = 'advisory' AND database = 0
                    AND classid = $1::int8::oid AND objid = $2::int8::oid
                    AND objsubid = 2 AND granted",
                &[
                    (tag.locktag_field2 as i64).into(),
                    (tag.locktag_field3 as i64).into(),
                ],
            )
            .ok()
            .flatten()
            .unwrap_or_else(|| "?".into());
            // once per statement: a suite call waits at many of its probes
            // while another session's call takes turns with it
            // SAFETY: reads the backend's statement start time.
            let statement = unsafe { pg_sys::GetCurrentStatementStartTimestamp() };
            if WAIT_SAID.with(|w| w.replace(statement)) != statement {
                notice!(
                    "storlab: waiting for another storlab probe on the device of {} (pid {holders}): probes of one volume never overlap, and this call's probes take turns with that session's (said once per statement; its time bound does not count the waits)",
                    target.name
                );
            }
            // SAFETY: as above; waits like any lock (lock_timeout, cancel)
            unsafe { pg_sys::LockAcquire(&tag, mode, true, false) };
        }
        Ok(DeviceLock(tag))
    }
}

thread_local! {
    /// The statement that last said it waits for another session's probe.
    static WAIT_SAID: std::cell::Cell<pg_sys::TimestampTz> = const { std::cell::Cell::new(0) };
}

impl Drop for DeviceLock {
    fn drop(&mut self) {
        // SAFETY: releases the session lock acquired in acquire().
        unsafe { pg_sys::LockRelease(&self.0, pg_sys::ExclusiveLock as pg_sys::LOCKMODE, true) };
    }
}

/// Checks the free space, runs the engine and stores one row; returns its id.
/// `suite` marks rows of the standard suite ('standard') and of fsync_cost
/// ('fsync_cost'), so that comparisons never pick up an ad-hoc probe;
/// `call` the suite call it is one of (compare_tablespaces, profile).
pub fn measure(
    target: &Target,
    mut spec: ProbeSpec,
    label: Option<&str>,
    suite: Option<&str>,
    call: Option<&str>,
) -> Result<i64, Error> {
    // a place for the figures (25006 in a read-only transaction), the
    // caller's right to write there, and a folder to write into, before
    // anything waits or writes
    standby::check_probes_can_be_kept()?;
    target.check_may_write()?;
    target.check_folder()?;
    let dir = scratch_dir(target);
    let _device = DeviceLock::acquire(target)?;
    let wal_reserve = if target.kind == "wal" {
        wal_reserve_bytes()
    } else {
        0
    };
    let need = spec.file_size + min_free_bytes() + wal_reserve;
    ensure_room(
        target,
        "a probe",
        need,
        &format!(
            "file_size {} + storlab.min_free_bytes {}{}",
            spec.file_size,
            min_free_bytes(),
            if wal_reserve > 0 {
                format!(" + max_wal_size {wal_reserve}")
            } else {
                String::new()
            }
        ),
    )?;
    // Files of ours whose backend died: the postmaster cleans tablespace temp
    // folders only at restart, and pg_wal never.
    let _ = engine::remove_stale(&dir);
    remember_scratch_dir(&dir);

    // read once: the facts stored with the probe decide how it runs, too
    let facts = env::facts(&target.folder);
    if spec.direct {
        let ignored = facts
            .as_ref()
            .ok()
            .and_then(|f| env::direct_io::ignored_by(&f.fs_type, &f.mount_options));
        if let Some(why) = ignored {
            // measured as it really runs, and stored so: direct = false
            notice!(
                "storlab: {}: {why}; this probe runs buffered and is stored with direct = false",
                target.name
            );
            spec.direct = false;
        }
    }
    let env = facts_json(target, &facts);
    let started = SystemTime::now();
    // The engine's threads do the I/O; this (the backend's only PostgreSQL
    // thread) waits on its latch and checks for cancel and
    // statement_timeout. A pending cancel raises its ERROR right there; the
    // engine's guards stop the workers and remove the scratch file while
    // that error unwinds.
    let result = engine::run_probe(&spec, &mut Backend).map_err(|e| match e {
        ProbeError::InvalidSpec(m) => invalid(m),
        ProbeError::DiskFull(m) => Error::new(SqlState::DiskFull, m),
        ProbeError::Cancelled => Error::new(SqlState::QueryCanceled, "probe cancelled"),
        ProbeError::Unsupported(m) => Error::new(
            SqlState::FeatureNotSupported,
            format!("engine io_uring cannot run on {}", target.name),
        )
        .with_detail(m)
        .with_hint("Probes with engine psync (iodepth 1) still work."),
        e @ ProbeError::Io { .. } => Error::new(
            SqlState::IoError,
            format!("probe on {} failed: {e}", target.name),
        ),
    })?;
    for notice in &result.notices {
        notice!("storlab: {notice}");
    }
    // a probe that completed nothing has no figure to give: stored, it
    // would read as 0 IOPS and no latency in every comparison
    if result.ops == 0 {
        return Err(invalid(format!(
            "the probe on {} completed no {} operation in {:.3} s: there is no figure to store",
            target.name,
            spec.workload.as_str(),
            result.elapsed.as_secs_f64()
        ))
        .with_hint("Give a longer duration: a few seconds measure a device well."));
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
        .map_err(|e| Error::new(SqlState::Internal, e.to_string()))?;
    let probe = record::Probe {
        tablespace: target.name.clone(),
        location: dir.display().to_string(),
        workload: spec.workload.as_str().into(),
        block_size: spec.block_size as i32,
        workers: spec.workers as i32,
        direct: result.direct,
        sync_method: spec.sync.as_str().into(),
        writes_per_sync: spec.writes_per_sync as i32,
        file_size: spec.file_size as i64,
        duration_s: secs,
        ops: result.ops as i64,
        bytes: result.bytes as i64,
        iops: result.ops as f64 / secs,
        mib_s: result.bytes as f64 / secs / (1024.0 * 1024.0),
        lat_mean_us: lat_mean,
        lat_p50_us: p50,
        lat_p90_us: p90,
        lat_p99_us: p99,
        lat_p999_us: p999,
        lat_max_us: max,
        histogram: record::bytea_hex(&histogram),
        env,
        label: label.map(str::to_owned),
        system_identifier: system_identifier(),
        hostname: hostname(),
        started_at: record::timestamp_text(started),
        suite: suite.map(str::to_owned),
        iodepth: spec.iodepth as i32,
        engine: spec.engine.as_str().into(),
        precision_pct: spec.precision_pct,
        iops_ci95_pct: result.iops_ci95_pct,
        measured_by: Some(super::identity::caller()),
        suite_call: call.map(str::to_owned),
        sync_every: spec.sync_every.map(|n| n as i32),
        sync_s: spec.sync_every.map(|_| result.sync_time.as_secs_f64()),
    };
    if standby::in_recovery() {
        return Ok(standby::keep_unstored(&probe));
    }
    let id = as_owner(|| {
        let sql = super::record::insert_sql(&probe, &[])?;
        Spi::get_one_with_args::<i64>(
            &format!("WITH stored AS ({sql}) SELECT (stored.r).id FROM stored"),
            &[JsonB(probe.to_json()).into()],
        )
    })
    .map_err(spi("storing the probe"))?
    .expect("INSERT ... RETURNING returns the row");
    Ok(id)
}

pub type ProbeRow = PgHeapTuple<'static, AllocatedByRust>;

/// Whether storlab.probes records sync_every: before ALTER EXTENSION
/// UPDATE to 0.12.0 it has no such column, and holds no such probe.
fn probes_record_sync_every() -> bool {
    super::record::table_columns("storlab.probes")
        .map_err(spi("reading storlab.probes' columns"))
        .or_raise()
        .iter()
        .any(|c| c == "sync_every")
}

/// A condition on storlab.probes (columns prefixed with `alias`, "" or
/// "p.") that keeps only the probes without sync_every: each op a commit
/// as sync_method says, as every suite's probe is. A reader that pools or
/// compares probe() rows with those takes it, so that a probe synced every
/// N writes (or once at the end) never stands in for one.
pub fn without_sync_every(alias: &str) -> String {
    if probes_record_sync_every() {
        format!("{alias}sync_every IS NULL")
    } else {
        "true".into()
    }
}

/// A probe's sync_every as text, 'NULL' where it has none, as SQL on
/// storlab.probes (columns prefixed with `alias`): for telling probes
/// apart where a NULL would not be compared.
pub fn sync_every_text(alias: &str) -> String {
    if probes_record_sync_every() {
        format!("coalesce({alias}sync_every::pg_catalog.text, 'NULL')")
    } else {
        "'NULL'".into()
    }
}

/// The probes `ids`, in the order measured, as values of the table's row
/// type (on a standby, this session's unstored ones).
pub fn fetch_rows(ids: &[i64]) -> Vec<ProbeRow> {
    as_owner(|| {
        Spi::connect(|c| {
            // (a standby's unstored ids are negative: -1 first)
            c.select(
                &format!(
                    "SELECT p FROM {} p WHERE p.id = ANY($1) ORDER BY pg_catalog.abs(p.id)",
                    standby::probes_from(2)
                ),
                None,
                &[ids.to_vec().into(), standby::probes_arg()],
            )?
            .map(|row| row.get::<ProbeRow>(1).map(|t| t.expect("a stored row")))
            .collect::<Result<Vec<_>, _>>()
        })
        .map_err(spi("reading the stored probes"))
        .or_raise()
    })
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
        sync_every: a.sync_every,
        iodepth: a.iodepth,
        engine: a.engine,
        precision_pct: a.precision_pct,
    }
}
