//! `storlab.probe_read_path()` (PostgreSQL 18): PostgreSQL's own read path
//! timed on a scratch table in one tablespace. Every scan starts cold: the
//! table's and its index's buffers are evicted from shared buffers (their
//! dirty pages written out first), their files synced and dropped from the
//! page cache (posix_fadvise DONTNEED), as a first read after a restart
//! finds them. Each scan is one stored row of storlab.probes (suite
//! 'read_path', engine 'postgres', with the io_method and the
//! effective_io_concurrency it ran at).
//!
//! The scratch table is the extension owner's, in the storlab schema, made
//! and dropped inside the caller's transaction: an error or a cancel rolls
//! it back with everything else, and no other session ever sees it. The
//! caller needs what CREATE TABLE ... TABLESPACE needs (CREATE on the
//! tablespace); where the tablespace sets its own effective_io_concurrency
//! (which a session's setting cannot override), the values are set on the
//! tablespace as the caller, inside the same transaction, and the original
//! set back before it ends: only the tablespace's owner can.

use std::time::{Instant, SystemTime, UNIX_EPOCH};

use pgrx::datum::JsonB;
use pgrx::prelude::*;

use super::error::{invalid, spi, Error, OrRaise, SqlState};
use super::identity::as_owner;
use super::probe::{ensure_room, facts_json, DeviceLock};
use super::read;
use super::server::{data_dir, hostname, system_identifier};
use super::settings::min_free_bytes;
use super::targets::Target;
use crate::sqltypes::Name;
use storlab_core::env;
use storlab_core::hdr::ProbeHistogram;
use storlab_core::request::read_path::{schedule, unsupported_major, ReadPathArgs};
use storlab_core::sql_text::{ident, literal};

/// Rows of the scratch table per 8 kB page: a 1,000-byte filler keeps
/// seven to a page, so that a bitmap heap scan of 2 % of the rows touches
/// about one page in eight, scattered: the reads prefetching is for.
const ROWS_PER_PAGE: i64 = 7;
const FILLER: i32 = 1000;
/// The bitmap heap scan's share of rows: r is spread over 0..1,000,000.
const BITMAP_BELOW: i64 = 20_000;

/// The server's asynchronous I/O settings, as stored with every read-path
/// probe (the effective_io_concurrency a scan ran at is its own column: the
/// session's setting is neither the server's nor the scan's).
pub fn aio_settings() -> serde_json::Value {
    let get = |name: &str| -> Option<String> {
        read::one::<String>(
            "SELECT pg_catalog.current_setting($1, true)",
            &[name.into()],
        )
        .ok()
        .flatten()
    };
    serde_json::json!({
        "server_version_num": get("server_version_num").and_then(|v| v.parse::<i64>().ok()),
        "io_method": get("io_method"),
        "io_workers": get("io_workers").and_then(|v| v.parse::<i64>().ok()),
        "io_combine_limit": get("io_combine_limit"),
    })
}

/// The effective_io_concurrency in effect for this session (the server's,
/// unless the session or its role or database set another).
pub fn session_eic() -> Option<i32> {
    read::one::<i32>(
        "SELECT pg_catalog.current_setting('effective_io_concurrency')::int4",
        &[],
    )
    .ok()
    .flatten()
}

pub fn server_version_num() -> i32 {
    read::one::<i32>(
        "SELECT pg_catalog.current_setting('server_version_num')::int4",
        &[],
    )
    .ok()
    .flatten()
    .unwrap_or(0)
}

/// The tablespace's own effective_io_concurrency (ALTER TABLESPACE ... SET),
/// if it has one.
pub fn tablespace_eic(oid: pg_sys::Oid) -> Option<i32> {
    // a scalar subquery: NULL, not "no row", where it has none
    read::one::<i32>(
        "SELECT (SELECT o.option_value::int4
                   FROM pg_catalog.pg_tablespace t, pg_catalog.pg_options_to_table(t.spcoptions) o
                  WHERE t.oid = $1 AND o.option_name = 'effective_io_concurrency')",
        &[oid.into()],
    )
    .map_err(spi("reading the tablespace's options"))
    .or_raise()
}

/// Sets a parameter for the rest of the probe only, as a function's SET
/// clause does (GUC_ACTION_SAVE): AtEOXact_GUC at the probe's end puts the
/// caller's value back, whether it was the session's or a SET LOCAL's.
fn set_local(name: &str, value: &str) {
    let (n, v) = (
        std::ffi::CString::new(name).expect("a parameter name"),
        std::ffi::CString::new(value).expect("a parameter value"),
    );
    // SAFETY: both strings outlive the call; elevel ERROR raises a bad
    // value as PostgreSQL's own error (longjmp caught by pgrx's guard).
    unsafe {
        pg_sys::set_config_option(
            n.as_ptr(),
            v.as_ptr(),
            pg_sys::GucContext::PGC_USERSET,
            pg_sys::GucSource::PGC_S_SESSION,
            pg_sys::GucAction::GUC_ACTION_SAVE,
            true,
            pgrx::PgLogLevel::ERROR as i32,
            false,
        );
    }
}

/// How each value reaches the scans: the session's setting, or the
/// tablespace's own option where it has one (which the setting cannot
/// override).
enum EicVia {
    Setting,
    Tablespace { quoted: String, original: i32 },
}

impl EicVia {
    fn set(&self, eic: i32) {
        match self {
            EicVia::Setting => set_local("effective_io_concurrency", &eic.to_string()),
            // as the caller: PostgreSQL checks the tablespace's ownership
            EicVia::Tablespace { quoted, .. } => Spi::run(&format!(
                "ALTER TABLESPACE {quoted} SET (effective_io_concurrency = {eic})"
            ))
            .map_err(spi("setting the tablespace's effective_io_concurrency"))
            .or_raise(),
        }
    }
}

/// Drop the table's and its index's pages from shared buffers and from the
/// kernel's page cache.
fn make_cold(rels: &[(pg_sys::Oid, String)]) -> Result<(), Error> {
    for (oid, _) in rels {
        evict_buffers(*oid)?;
    }
    let data = data_dir();
    for (_, rel_path) in rels {
        // segments: path, path.1, path.2, ... (1 GB each)
        for seg in 0.. {
            let name = if seg == 0 {
                rel_path.clone()
            } else {
                format!("{rel_path}.{seg}")
            };
            let path = data.join(&name);
            match env::page_cache::drop_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound && seg > 0 => break,
                Err(e) => {
                    return Err(Error::new(
                        SqlState::IoError,
                        format!("cannot drop {} from the page cache: {e}", path.display()),
                    ))
                }
            }
        }
        pg_sys::check_for_interrupts!();
    }
    Ok(())
}

#[cfg(feature = "pg18")]
fn evict_buffers(oid: pg_sys::Oid) -> Result<(), Error> {
    let (mut evicted, mut flushed, mut skipped) = (0, 0, 0);
    // SAFETY: the relation is opened and closed under AccessShareLock (the
    // transaction already holds AccessExclusiveLock: it made the table);
    // EvictRelUnpinnedBuffers writes dirty pages out before evicting them.
    unsafe {
        let rel = pg_sys::relation_open(oid, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
        pg_sys::EvictRelUnpinnedBuffers(rel, &mut evicted, &mut flushed, &mut skipped);
        pg_sys::relation_close(rel, pg_sys::AccessShareLock as pg_sys::LOCKMODE);
    }
    if skipped > 0 {
        return Err(Error::new(
            SqlState::Internal,
            format!("{skipped} buffers of the scratch table stayed pinned: it cannot be read cold"),
        ));
    }
    Ok(())
}

#[cfg(not(feature = "pg18"))]
fn evict_buffers(_oid: pg_sys::Oid) -> Result<(), Error> {
    // unreachable: run() refuses every major before 18 first
    Err(Error::new(
        SqlState::FeatureNotSupported,
        "evicting a relation's buffers needs PostgreSQL 18",
    ))
}

/// Blocks this transaction read from disk (not found in shared buffers)
/// of the given relations so far.
fn blocks_read(oids: &[pg_sys::Oid]) -> i64 {
    Spi::get_one_with_args::<i64>(
        "SELECT sum(pg_catalog.pg_stat_get_xact_blocks_fetched(o) - pg_catalog.pg_stat_get_xact_blocks_hit(o))::int8
           FROM pg_catalog.unnest($1::oid[]) o",
        &[oids.to_vec().into()],
    )
    .map_err(spi("reading block counts"))
    .or_raise()
    .unwrap_or(0)
}

/// Plan settings that force each scan (and keep parallel workers out: one
/// backend's read path is what is timed).
fn plan_for(scan: &str) {
    set_local("max_parallel_workers_per_gather", "0");
    set_local("jit", "off");
    set_local("enable_indexscan", "off");
    set_local("enable_indexonlyscan", "off");
    let bitmap = scan == "bitmapscan";
    set_local("enable_bitmapscan", if bitmap { "on" } else { "off" });
    set_local("enable_seqscan", if bitmap { "off" } else { "on" });
}

fn query(table: &str, scan: &str) -> String {
    match scan {
        "bitmapscan" => format!("SELECT pg_catalog.count(*) FROM {table} WHERE r < {BITMAP_BELOW}"),
        _ => format!("SELECT pg_catalog.count(*) FROM {table}"),
    }
}

/// The plan's top scan node must be the one meant: a planner that chose
/// otherwise would time something else under its name.
fn check_plan(table: &str, scan: &str) -> Result<(), Error> {
    let plan = as_owner(|| {
        Spi::get_one::<pgrx::datum::Json>(&format!("EXPLAIN (FORMAT JSON) {}", query(table, scan)))
    })
    .map_err(spi("planning a scan"))?
    .map(|j| j.0.to_string())
    .unwrap_or_default();
    let want = if scan == "bitmapscan" {
        "Bitmap Heap Scan"
    } else {
        "Seq Scan"
    };
    if plan.contains(want) {
        Ok(())
    } else {
        Err(Error::new(
            SqlState::Internal,
            format!("the planner did not choose a {want} for the read-path probe"),
        )
        .with_detail(plan))
    }
}

pub fn run(target: &Target, args: &ReadPathArgs, label: Option<&str>) -> Result<Vec<i64>, Error> {
    if let Some(e) = unsupported_major(server_version_num()) {
        return Err(e);
    }
    let Some(ts_oid) = target.oid.filter(|_| target.kind == "tablespace") else {
        return Err(invalid(
            "the read-path probe reads a table, and pg_wal holds none: name a tablespace",
        ));
    };
    target.check_may_write()?;
    target.check_folder()?;
    // the blocks a scan reads come from the statistics counters
    if Spi::get_one_with_args::<bool>(
        "SELECT pg_catalog.current_setting('track_counts')::bool",
        &[],
    )
    .ok()
    .flatten()
        != Some(true)
    {
        return Err(Error::new(
            SqlState::ObjectNotInPrerequisiteState,
            "the read-path probe counts the blocks each scan reads, and track_counts is off",
        )
        .with_hint("SET track_counts = on (a superuser's setting) for the probe."));
    }
    let own_eic = tablespace_eic(ts_oid);
    if let Some(original) = own_eic {
        // only its owner may set another value on it, as ALTER TABLESPACE
        let owner = Spi::get_one_with_args::<bool>(
            "SELECT pg_catalog.pg_has_role(spcowner, 'USAGE') FROM pg_catalog.pg_tablespace WHERE oid = $1",
            &[ts_oid.into()],
        )
        .map_err(spi("checking the tablespace's owner"))?
        .unwrap_or(false);
        if !owner {
            return Err(Error::new(
                SqlState::InsufficientPrivilege,
                format!("{} sets its own effective_io_concurrency ({original}), which only its owner may change for the probe", target.name),
            )
            .with_detail("A session's setting cannot override a tablespace's own: the probe sets each value on the tablespace inside its transaction, as ALTER TABLESPACE, which needs ownership.")
            .with_hint(format!("Run it as the owner of {}, or ALTER TABLESPACE {} RESET (effective_io_concurrency) first.", target.name, ident(&target.name))));
        }
    }
    let _device = DeviceLock::acquire(target)?;
    let rows = (args.table_bytes / 8192).max(1) * ROWS_PER_PAGE;
    // the table, its index (~ 20 bytes a row) and the reserve
    let need = args.table_bytes + rows * 24 + min_free_bytes() as i64;
    ensure_room(
        target,
        "a read-path probe",
        need as u64,
        &format!(
            "table_size {} and its index + storlab.min_free_bytes {}",
            args.table_bytes,
            min_free_bytes()
        ),
    )?;
    let facts = env::facts(&target.folder);
    let quoted_ts = ident(&target.name);
    let via = match own_eic {
        Some(original) => {
            notice!(
                "storlab: {} sets its own effective_io_concurrency ({original}), which a session cannot override: each value is set on the tablespace inside this transaction only, and {original} set back before it ends",
                target.name
            );
            EicVia::Tablespace {
                quoted: quoted_ts.clone(),
                original,
            }
        }
        None => EicVia::Setting,
    };
    // every parameter set below is undone when the probe returns, as a
    // function's SET clause is: the caller's session keeps its own.
    // SAFETY: paired with AtEOXact_GUC below (an error aborts the
    // (sub)transaction, which undoes them too).
    let nest = unsafe { pg_sys::NewGUCNestLevel() };

    // the scratch table, the owner's, named for this backend
    let table = format!("storlab.read_path_{}", std::process::id());
    as_owner(|| {
        Spi::run(&format!(
            "CREATE UNLOGGED TABLE {table} (id int8, r int4, filler text)
               WITH (autovacuum_enabled = off) TABLESPACE {quoted_ts};
             INSERT INTO {table}
               SELECT g, ((g * 2654435761) % 1000000)::int4, pg_catalog.repeat('x', {FILLER})
                 FROM pg_catalog.generate_series(1, {rows}) g;
             CREATE INDEX ON {table} (r) TABLESPACE {quoted_ts};
             ANALYZE {table}"
        ))
    })
    .map_err(spi("making the scratch table"))?;
    pg_sys::check_for_interrupts!();
    let rels: Vec<(pg_sys::Oid, String)> = as_owner(|| {
        Spi::connect(|c| {
            c.select(
                "SELECT c.oid, pg_catalog.pg_relation_filepath(c.oid)
                   FROM pg_catalog.pg_class c
                  WHERE c.oid = $1::regclass
                     OR c.oid IN (SELECT indexrelid FROM pg_catalog.pg_index WHERE indrelid = $1::regclass)",
                None,
                &[table.as_str().into()],
            )?
            .map(|r| Ok((r.get(1)?.expect("oid"), r.get::<String>(2)?.expect("a file path"))))
            .collect::<Result<Vec<_>, pgrx::spi::Error>>()
        })
    })
    .map_err(spi("finding the scratch table's files"))?;
    let oids: Vec<pg_sys::Oid> = rels.iter().map(|r| r.0).collect();
    let heap_bytes = as_owner(|| {
        Spi::get_one_with_args::<i64>(
            &format!("SELECT pg_catalog.pg_relation_size({})", literal(&table)),
            &[],
        )
    })
    .map_err(spi("sizing the scratch table"))?
    .unwrap_or(0);
    let aio = aio_settings();
    let io_method = aio["io_method"].as_str().unwrap_or("sync").to_string();
    let mut env = facts_json(target, &facts);
    env["aio"] = aio;
    let histogram = ProbeHistogram::new()
        .to_bytes()
        .map_err(|e| Error::new(SqlState::Internal, e.to_string()))?;
    for scan in ["seqscan", "bitmapscan"] {
        plan_for(scan);
        check_plan(&table, scan)?;
    }

    let measured_by = super::identity::caller();
    let mut ids = Vec::new();
    for (repetition, eic, scan) in schedule(args) {
        via.set(eic);
        plan_for(scan);
        make_cold(&rels)?;
        let before = blocks_read(&oids);
        let started = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let t0 = Instant::now();
        let found = as_owner(|| Spi::get_one::<i64>(&query(&table, scan)))
            .map_err(spi("scanning the scratch table"))?
            .unwrap_or(0);
        let secs = t0.elapsed().as_secs_f64().max(f64::MIN_POSITIVE);
        let read = blocks_read(&oids) - before;
        // a cold scan reads; a figure of nothing would be stored and compared
        if read <= 0 {
            return Err(Error::new(
                SqlState::Internal,
                format!("the {scan} of the scratch table read no block from outside shared buffers: it was not cold"),
            ));
        }
        let mut row_env = env.clone();
        row_env["scan"] = serde_json::json!({
            "rows": rows, "rows_found": found, "repetition": repetition,
            "effective_io_concurrency_via": match via { EicVia::Setting => "setting", EicVia::Tablespace { .. } => "tablespace option" },
        });
        let bytes = read * 8192;
        let id = as_owner(|| {
            Spi::get_one_with_args::<i64>(
                "INSERT INTO storlab.probes (tablespace, location, workload, block_size, workers, direct, sync_method,
                     file_size, duration_s, ops, bytes, iops, mib_s, histogram, env, label, system_identifier,
                     hostname, started_at, suite, iodepth, engine, io_method, effective_io_concurrency, measured_by)
                 VALUES ($1, $2, $3, 8192, 1, false, 'none', $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
                         pg_catalog.to_timestamp($15), 'read_path', 1, 'postgres', $16, $17, $18)
                 RETURNING id",
                &[
                    Name(target.name.clone()).into(),
                    target.folder.display().to_string().into(),
                    scan.into(),
                    heap_bytes.into(),
                    secs.into(),
                    read.into(),
                    bytes.into(),
                    (read as f64 / secs).into(),
                    (bytes as f64 / secs / 1_048_576.0).into(),
                    histogram.clone().into(),
                    JsonB(row_env).into(),
                    label.map(str::to_owned).into(),
                    system_identifier().into(),
                    hostname().into(),
                    started.into(),
                    io_method.as_str().into(),
                    eic.into(),
                    Name(measured_by.clone()).into(),
                ],
            )
        })
        .map_err(spi("storing the read-path probe"))?
        .expect("INSERT ... RETURNING id returns the id");
        ids.push(id);
        pg_sys::check_for_interrupts!();
    }

    if let EicVia::Tablespace { original, .. } = via {
        via.set(original);
    }
    // SAFETY: the level made above; the values saved since are restored
    unsafe { pg_sys::AtEOXact_GUC(true, nest) };
    as_owner(|| Spi::run(&format!("DROP TABLE {table}")))
        .map_err(spi("dropping the scratch table"))?;
    Ok(ids)
}
