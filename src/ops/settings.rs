//! storlab's settings (GUCs), all superuser-only: they bound what a granted
//! role's probes and benchmarks may do to the server.

use std::time::Duration;

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

pub static MAX_PROBE_DURATION_S: GucSetting<i32> = GucSetting::<i32>::new(300);
pub static MIN_FREE_BYTES: GucSetting<i32> = GucSetting::<i32>::new(64 * 1024 * 1024);
pub static SUITE_FILE_KB: GucSetting<i32> = GucSetting::<i32>::new(256 * 1024);

pub static MAX_BENCH_DURATION_S: GucSetting<i32> = GucSetting::<i32>::new(3600);
pub static CONNINFO: GucSetting<Option<std::ffi::CString>> =
    GucSetting::<Option<std::ffi::CString>>::new(None);

/// Runs when a backend first loads the library.
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
    GucRegistry::define_int_guc(
        c"storlab.max_bench_duration",
        c"Longest duration one storlab benchmark run may have.",
        c"Guards a production server against a run started with a mistaken duration.",
        &MAX_BENCH_DURATION_S,
        1,
        7 * 24 * 3600,
        GucContext::Suset,
        GucFlags::UNIT_S,
    );
    GucRegistry::define_string_guc(
        c"storlab.conninfo",
        c"How jobs' pgbench and psql connect to this server: host, port, user, passfile.",
        c"Empty: the server's own socket folder and port, as the calling role. Set it when pg_hba.conf needs more, e.g. 'host=127.0.0.1 passfile=/var/lib/postgresql/.pgpass'.",
        &CONNINFO,
        GucContext::Suset,
        GucFlags::default(),
    );
}

pub fn suite_file_cap() -> u64 {
    SUITE_FILE_KB.get().max(1024) as u64 * 1024
}

pub fn max_probe_duration() -> Duration {
    Duration::from_secs(MAX_PROBE_DURATION_S.get().max(1) as u64)
}

pub fn min_free_bytes() -> u64 {
    MIN_FREE_BYTES.get().max(0) as u64
}

pub fn max_bench_duration_s() -> i64 {
    MAX_BENCH_DURATION_S.get().max(1) as i64
}

/// storlab.conninfo, when set.
pub fn conninfo() -> Option<String> {
    CONNINFO
        .get()
        .map(|c| c.to_string_lossy().into_owned())
        .filter(|c| !c.trim().is_empty())
}
