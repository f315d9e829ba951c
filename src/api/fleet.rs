//! The fleet (sql/catalog/fleet.sql, docs/fleet.md): this server's node,
//! the checks the collector's PL/pgSQL makes through the core, and the
//! readers that compare the servers' copied results.

use pgrx::datum::{Interval, Uuid};
use pgrx::prelude::*;

use super::interval_micros;
use crate::ops::error::{invalid, raise, required, OrRaise};
use crate::ops::{fleet, server};
use storlab_core::fleet::{check_name, check_readable, split_conninfo};
use storlab_core::report::compare::Estimate;

/// This server's node_id: one per cluster and place (system identifier,
/// host name, data directory), minted at first use; NULL on a standby that
/// has none yet. Every result row stores it.
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn node_id() -> Option<Uuid> {
    let _called = crate::ops::error::called("storlab.node_id");
    server::node_id()
}

/// This server as a collector reads it (the view storlab.node).
#[pg_extern(volatile, parallel_unsafe)]
#[search_path(pg_catalog, pg_temp)]
fn node_info() -> TableIterator<
    'static,
    (
        name!(node_id, Option<Uuid>),
        name!(system_identifier, i64),
        name!(hostname, String),
        name!(server_version_num, i32),
        name!(storlab_version, String),
    ),
> {
    let _called = crate::ops::error::called("storlab.node_info");
    TableIterator::once((
        server::node_id(),
        server::system_identifier(),
        server::hostname(),
        pg_sys::PG_VERSION_NUM as i32,
        env!("CARGO_PKG_VERSION").to_string(),
    ))
}

/// 22023 unless `name` can name a fleet server.
#[pg_extern(immutable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn fleet_check_name(name: &str) {
    let _called = crate::ops::error::called("storlab.fleet_check_name");
    check_name(name).or_raise();
}

/// 0A000 unless this collector reads a server whose storlab is `remote`.
#[pg_extern(immutable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn fleet_check_version(remote: &str, collector: &str) {
    let _called = crate::ops::error::called("storlab.fleet_check_version");
    check_readable(remote, collector).or_raise();
}

/// A conninfo's options, each with where postgres_fdw takes it: 'server'
/// or 'mapping' (the role and the secrets). 22023 for a conninfo storlab
/// does not take, naming no value.
#[pg_extern(immutable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn fleet_conninfo_options(
    conninfo: &str,
) -> TableIterator<
    'static,
    (
        name!(context, String),
        name!(keyword, String),
        name!(value, String),
    ),
> {
    let _called = crate::ops::error::called("storlab.fleet_conninfo_options");
    let split = split_conninfo(conninfo).or_raise();
    let server = split
        .server
        .into_iter()
        .map(|(k, v)| ("server".to_string(), k, v));
    let mapping = split
        .mapping
        .into_iter()
        .map(|(k, v)| ("mapping".to_string(), k, v));
    TableIterator::new(server.chain(mapping).collect::<Vec<_>>())
}

/// A conninfo without its secrets, as storlab.fleet_servers shows it.
#[pg_extern(immutable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn fleet_conninfo_shown(conninfo: &str) -> String {
    let _called = crate::ops::error::called("storlab.fleet_conninfo_shown");
    split_conninfo(conninfo).or_raise().shown()
}

fn positive_age(max_age: Option<Interval>) -> Interval {
    let max_age = required(max_age, "max_age");
    if interval_micros(&max_age) <= 0 {
        raise(invalid("max_age must be positive, e.g. '30 days'"));
    }
    max_age
}

/// Every fleet server's tablespaces side by side (or the named servers'),
/// from the newest standard-suite figures copied by fleet_sync() younger
/// than max_age: compare_tablespaces()' columns with the server first,
/// ranked over the whole fleet. Nothing is probed.
#[pg_extern(stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn compare_fleet(
    servers: default!(Option<Vec<Option<String>>>, "NULL"),
    max_age: default!(Option<Interval>, "'30 days'"),
) -> TableIterator<
    'static,
    (
        name!(server, String),
        name!(tablespace, String),
        name!(fs_type, Option<String>),
        name!(device, Option<String>),
        name!(randread_p50_us, Option<f64>),
        name!(randread_p99_us, Option<f64>),
        name!(randread_iops, Option<f64>),
        name!(randread_iops_qd32, Option<f64>),
        name!(randwrite_p99_us, Option<f64>),
        name!(wal_commit_p50_us, Option<f64>),
        name!(wal_commit_p99_us, Option<f64>),
        name!(seqwrite_mib_s, Option<f64>),
        name!(seqread_mib_s, Option<f64>),
        name!(volatile, bool),
        name!(randread_vs_best, Option<f64>),
        name!(wal_commit_vs_best, Option<f64>),
        name!(best_for, Vec<String>),
        name!(probed_at, Option<pgrx::datum::TimestampWithTimeZone>),
        name!(same_volume_as, Option<String>),
        name!(repetitions, i32),
        name!(randread_p99_ci95_pct, Option<f64>),
        name!(wal_commit_p99_ci95_pct, Option<f64>),
        name!(seqwrite_ci95_pct, Option<f64>),
        name!(seqread_ci95_pct, Option<f64>),
        name!(tied_for, Vec<String>),
        name!(caveats, Vec<String>),
    ),
> {
    let _called = crate::ops::error::called("storlab.compare_fleet");
    let servers = servers.map(|s| {
        s.into_iter()
            .map(|n| n.unwrap_or_else(|| raise(invalid("servers must not contain NULL"))))
            .collect::<Vec<_>>()
    });
    if servers.as_ref().is_some_and(|s| s.is_empty()) {
        raise(invalid(
            "servers must name at least one fleet server, or be NULL for all of them",
        ));
    }
    let rows: Vec<_> = fleet::compare_fleet(servers, positive_age(max_age))
        .into_iter()
        .map(|r| {
            let f = r.figures;
            let mean = |e: Option<Estimate>| e.map(|e| e.mean);
            let ci = |e: Option<Estimate>| e.and_then(|e| e.ci95_pct);
            (
                r.server,
                r.tablespace,
                r.fs_type,
                r.device,
                f.randread_p50_us,
                mean(f.randread_p99_us),
                f.randread_iops,
                f.randread_iops_qd32,
                f.randwrite_p99_us,
                f.wal_commit_p50_us,
                mean(f.wal_commit_p99_us),
                mean(f.seqwrite_mib_s),
                mean(f.seqread_mib_s),
                r.volatile,
                r.ranking.randread_vs_best,
                r.ranking.wal_commit_vs_best,
                r.ranking.best_for.into_iter().map(String::from).collect(),
                f.first_at,
                r.same_volume_as,
                f.repetitions as i32,
                ci(f.randread_p99_us),
                ci(f.wal_commit_p99_us),
                ci(f.seqwrite_mib_s),
                ci(f.seqread_mib_s),
                r.ranking.tied_for.into_iter().map(String::from).collect(),
                r.ranking.caveats,
            )
        })
        .collect();
    TableIterator::new(rows)
}

/// Server a (the old one, say) against server b, figure by figure: the
/// mean of each side's figures younger than max_age, b's change against a,
/// and Welch's test where both sides have two figures or more.
#[pg_extern(stable, parallel_safe)]
#[search_path(pg_catalog, pg_temp)]
fn compare_servers(
    a: Option<String>,
    b: Option<String>,
    workloads: default!(Option<Vec<Option<String>>>, "NULL"),
    max_age: default!(Option<Interval>, "'30 days'"),
) -> TableIterator<
    'static,
    (
        name!(tablespace, Option<String>),
        name!(workload, String),
        name!(metric, String),
        name!(a_value, f64),
        name!(b_value, f64),
        name!(change_pct, Option<f64>),
        name!(a_n, i32),
        name!(b_n, i32),
        name!(p_value, Option<f64>),
        name!(significant, Option<bool>),
        name!(verdict, String),
    ),
> {
    let _called = crate::ops::error::called("storlab.compare_servers");
    let (a, b) = (required(a, "a"), required(b, "b"));
    let workloads = workloads.map(|w| {
        w.into_iter()
            .map(|n| n.unwrap_or_else(|| raise(invalid("workloads must not contain NULL"))))
            .collect::<Vec<_>>()
    });
    if workloads.as_ref().is_some_and(|w| w.is_empty()) {
        raise(invalid(
            "workloads must name at least one workload, or be NULL for all of them",
        ));
    }
    let rows: Vec<_> = fleet::compare_servers(&a, &b, workloads, positive_age(max_age))
        .into_iter()
        .map(|d| {
            (
                d.tablespace,
                d.workload,
                d.metric,
                d.a_value,
                d.b_value,
                d.change_pct,
                d.a_n,
                d.b_n,
                d.p_value,
                d.significant,
                d.verdict,
            )
        })
        .collect();
    TableIterator::new(rows)
}
