use super::*;
use crate::pgbench::{ProgressRow, Protocol};

fn run(script: &str, options: serde_json::Value) -> BenchRun {
    BenchRun::new(script.into(), 8, 2, 30_000_000, 3600, &options).unwrap()
}

#[test]
fn a_run_logs_every_transaction_unless_it_samples() {
    let conn = Connection {
        host: Some("/run/postgresql".into()),
        port: Some(5432),
        user: Some("alice".into()),
        dbname: "lab".into(),
    };
    let o = options(
        &run(
            "tpcb-like",
            serde_json::json!({"protocol": "prepared", "progress_interval": 5, "vacuum": false}),
        ),
        "lab",
        Path::new("/tmp/run_7"),
        Some(10),
        conn.clone(),
    );
    assert_eq!(
        (o.scale, o.clients, o.jobs, o.duration_s),
        (Some(10), 8, 2, 30)
    );
    assert_eq!(o.protocol, Protocol::Prepared);
    assert_eq!(o.progress_s, Some(5));
    assert!(o.log && o.no_vacuum);
    assert_eq!((o.log_prefix.as_str(), o.sampling_rate), ("tx", None));
    assert_eq!(o.run_dir, Path::new("/tmp/run_7"));
    assert_eq!(o.connection, conn);
    // read-only scripts log one in ten; pgbench vacuums unless told not to
    let o = options(
        &run("select-only", serde_json::json!({})),
        "lab",
        Path::new("/tmp/run_8"),
        None,
        conn,
    );
    assert_eq!(o.sampling_rate, Some(0.1));
    assert!(!o.no_vacuum);
    assert_eq!(o.rate_tps, None);
}

#[test]
fn the_layouts_settings_are_read_after_the_recorded_ones_once_each() {
    assert_eq!(settings_to_read(&[]), RECORDED_SETTINGS.to_vec());
    let names = settings_to_read(&["Work_Mem".into(), "jit".into(), "JIT".into()]);
    assert_eq!(names.len(), RECORDED_SETTINGS.len() + 1);
    assert_eq!(names.last().map(String::as_str), Some("jit"));
}

#[test]
fn settings_are_read_from_psqls_bare_output() {
    assert_eq!(
        settings_printed("{\"fsync\": \"on\"}\n").unwrap(),
        serde_json::json!({"fsync": "on"})
    );
    let e = settings_printed("\n").unwrap_err();
    assert!(
        e.starts_with("reading the settings of pgbench's sessions: EOF while parsing a value"),
        "{e}"
    );
    assert!(e.ends_with(" in \"\""), "{e}");
}

#[test]
fn unread_settings_invalidate_a_run_said_first() {
    assert_eq!(invalid(None, None), None);
    assert_eq!(invalid(None, Some("moved".into())), Some("moved".into()));
    assert_eq!(
        invalid(Some("psql: connection refused"), None).unwrap(),
        "the settings of its sessions could not be read (psql: connection refused)"
    );
    assert_eq!(
        invalid(Some("x"), Some("pgbench_accounts moved".into())).unwrap(),
        "the settings of its sessions could not be read (x); pgbench_accounts moved"
    );
}

#[test]
fn a_run_without_a_transaction_has_no_figure() {
    let none = Summary {
        transactions: Some(0),
        ..Default::default()
    };
    assert_eq!(
        no_figure(&none, 30, None).unwrap(),
        "pgbench completed no transaction in 30 s: there is no figure to store"
    );
    let report = StderrReport {
        messages: vec![
            "warning: something".into(),
            "error: client 0 script 0 aborted in command 1 query 0: ERROR:  permission denied for table pgbench_accounts".into(),
        ],
        ..Default::default()
    };
    assert_eq!(
        no_figure(&none, 30, Some(&report)).unwrap(),
        "pgbench completed no transaction in 30 s: there is no figure to store (client 0 script 0 aborted in command 1 query 0: ERROR:  permission denied for table pgbench_accounts)"
    );
    // a summary without the count (pgbench's format changed) is not a run of nothing
    for transactions in [Some(1), None] {
        let s = Summary {
            transactions,
            ..Default::default()
        };
        assert_eq!(no_figure(&s, 30, Some(&report)), None);
    }
}

#[test]
fn the_row_takes_the_histograms_stddev_when_pgbench_printed_none() {
    let summary = Summary {
        tps: Some(812.5),
        transactions: Some(24375),
        failed: Some(0),
        lat_avg_ms: Some(9.8),
        ..Default::default()
    };
    let p = LatencyPercentiles {
        count: 24375,
        lat_avg_ms: 9.7,
        lat_stddev_ms: 3.1,
        lat_p50_ms: 9.0,
        lat_p90_ms: 13.0,
        lat_p95_ms: 15.0,
        lat_p99_ms: 21.0,
        lat_max_ms: 80.0,
    };
    let measured = |summary, percentiles| Measured {
        summary,
        percentiles,
        histogram: Some(vec![1, 2]),
        pgbench_version: Some("pgbench (PostgreSQL) 18.1".into()),
        observed: serde_json::json!({"start": {}, "end": {}}),
        invalid: Some("why".into()),
        counters: RunCounters::default(),
        device_io: Some(crate::record::RunDeviceIo {
            elapsed_ms: 30_010,
            ..Default::default()
        }),
        memory: Some((4 << 30, crate::env::cgroup::MemorySource::Limit)),
    };
    let r = measured(&summary, Some(&p)).result();
    assert_eq!(
        (r.tps, r.transactions, r.failures),
        (Some(812.5), Some(24375), Some(0))
    );
    // the average is pgbench's, the percentiles the log's
    assert_eq!((r.lat_avg_ms, r.lat_stddev_ms), (Some(9.8), Some(3.1)));
    assert_eq!(
        (
            r.lat_p50_ms,
            r.lat_p90_ms,
            r.lat_p95_ms,
            r.lat_p99_ms,
            r.lat_max_ms
        ),
        (Some(9.0), Some(13.0), Some(15.0), Some(21.0), Some(80.0))
    );
    assert_eq!(r.histogram, Some(vec![1, 2]));
    assert_eq!(r.invalid.as_deref(), Some("why"));
    assert_eq!(r.device_io.as_ref().map(|d| d.elapsed_ms), Some(30_010));
    assert_eq!(
        (r.memory_bytes, r.memory_source.as_deref()),
        (Some(4 << 30), Some("memory limit"))
    );
    // pgbench's own stddev (with --rate or --progress) wins
    let printed = Summary {
        lat_stddev_ms: Some(2.5),
        ..summary.clone()
    };
    assert_eq!(
        measured(&printed, Some(&p)).result().lat_stddev_ms,
        Some(2.5)
    );
    // no log read: no percentile
    let r = measured(&summary, None).result();
    assert_eq!((r.lat_stddev_ms, r.lat_p99_ms), (None, None));
}

#[test]
fn the_jobs_detail_has_pgbenchs_progress_and_messages_when_it_printed_any() {
    assert_eq!(progress_detail(&StderrReport::default()), None);
    let report = StderrReport {
        progress: vec![ProgressRow {
            t_s: 5.0,
            tps: 801.2,
            lat_avg_ms: 9.9,
            lat_stddev_ms: 2.0,
            failed: 0,
            lag_ms: None,
            skipped: None,
            retried: None,
            retries: None,
        }],
        ..Default::default()
    };
    assert_eq!(
        progress_detail(&report).unwrap(),
        serde_json::json!({
            "pgbench_progress": [{"t_s": 5.0, "tps": 801.2, "lat_avg_ms": 9.9, "lat_stddev_ms": 2.0,
                                  "failed": 0, "lag_ms": null, "skipped": null}],
            "pgbench_messages": []
        })
    );
    let said = StderrReport {
        messages: vec!["warning: x".into()],
        ..Default::default()
    };
    assert_eq!(
        progress_detail(&said).unwrap(),
        serde_json::json!({"pgbench_progress": [], "pgbench_messages": ["warning: x"]})
    );
}
