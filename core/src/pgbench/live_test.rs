//! End-to-end check against a real server: the arguments this module builds
//! are accepted by the real pgbench, the storlab scripts run, and the
//! parsers agree with each other on the output.
//!
//! Ignored by default because it needs a server and REPLACES pgbench's
//! tables in the database it is given. Run it against a throwaway cluster:
//!
//! ```text
//! STORLAB_TEST_PGHOST=/tmp/sock STORLAB_TEST_PGPORT=55439 STORLAB_TEST_PGUSER=postgres \
//! STORLAB_TEST_PGDATABASE=postgres cargo test live_ -- --ignored
//! ```
//!
//! `STORLAB_TEST_PGBENCH` overrides the pgbench binary (default: PostgreSQL
//! 15's on Debian).

use std::ffi::OsString;
use std::fs;
use std::process::{Command, Output};

use super::test_support::TempDir;
use super::*;

fn env(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} is not set; see the comment at the top of live_test.rs"))
}

fn connection() -> Connection {
    Connection {
        host: Some(env("STORLAB_TEST_PGHOST")),
        port: Some(env("STORLAB_TEST_PGPORT").parse().expect("port")),
        user: Some(env("STORLAB_TEST_PGUSER")),
        dbname: env("STORLAB_TEST_PGDATABASE"),
    }
}

fn pgbench(args: &[OsString]) -> Output {
    let bin = std::env::var("STORLAB_TEST_PGBENCH")
        .unwrap_or_else(|_| "/usr/lib/postgresql/15/bin/pgbench".into());
    Command::new(bin)
        .args(args)
        .output()
        .expect("spawn pgbench")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
#[ignore]
fn live_init_and_every_script() {
    let mut init = InitOptions::new(1, "unused");
    init.fillfactor = Some(90);
    init.connection = connection();
    let out = pgbench(&init.args().unwrap());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let timings = parse_init_timings(&text(&out.stderr)).unwrap().unwrap();
    assert!(timings.steps.iter().any(|(n, _)| n == "primary keys"));

    // The append table's DDL, run as a one-transaction pgbench script so
    // that no other client is needed.
    let tmp = TempDir::new("live");
    let ddl = tmp.path().join("ddl.sql");
    fs::write(&ddl, APPEND_TABLE_DDL).unwrap();
    let mut args: Vec<OsString> = vec!["--no-vacuum".into(), "--transactions=1".into()];
    let mut file = OsString::from("--file=");
    file.push(&ddl);
    args.push(file);
    connection().push_args(&mut args).unwrap();
    let out = pgbench(&args);
    assert!(out.status.success(), "{}", text(&out.stderr));

    for (i, script) in scripts::all().into_iter().enumerate() {
        let mut o = BenchOptions::new(script.name, "unused", tmp.path().join(format!("run{i}")));
        o.connection = connection();
        o.scale = Some(1);
        o.clients = 2;
        o.jobs = 2;
        o.duration_s = 2;
        o.progress_s = Some(1);
        o.protocol = Protocol::ALL[i % 3];
        o.log = true;
        o.no_vacuum = true;
        o.prepare_run_dir().unwrap();
        let out = pgbench(&o.args().unwrap());
        let stderr = parse_stderr(&text(&out.stderr)).unwrap();
        assert!(
            out.status.success(),
            "{}: {:?}",
            script.name,
            stderr.messages
        );
        let summary = parse_summary(&text(&out.stdout)).unwrap();
        assert_eq!(summary.clients, Some(2), "{}", script.name);
        assert_eq!(summary.query_mode.as_deref(), Some(o.protocol.as_str()));
        assert_eq!(summary.scaling_factor, Some(1));
        assert_eq!(summary.failed, Some(0));
        assert!(summary.tps.unwrap() > 0.0, "{}", script.name);
        let stats = read_tx_logs(&o.run_dir, &o.log_prefix, o.tx_log_format()).unwrap();
        // Unsampled, the log holds exactly the transactions pgbench counted.
        assert_eq!(
            Some(stats.ok as i64),
            summary.transactions,
            "{}",
            script.name
        );
        assert_eq!(stats.partial_lines, 0);
        let p = stats.histogram.percentiles().unwrap();
        assert!(p.lat_p50_ms <= p.lat_p99_ms && p.lat_p99_ms <= p.lat_max_ms);
    }

    // A rate-limited run: the failure columns of the summary are filled.
    let mut o = BenchOptions::new("select-only", "unused", tmp.path().join("rate"));
    o.connection = connection();
    o.duration_s = 3;
    o.rate_tps = Some(200.0);
    o.prepare_run_dir().unwrap();
    let out = pgbench(&o.args().unwrap());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let summary = parse_summary(&text(&out.stdout)).unwrap();
    assert_eq!(
        summary.serialization_failures,
        Some(0),
        "--failures-detailed was passed"
    );
    assert!(summary.transactions.unwrap() > 0);
}
