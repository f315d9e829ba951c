use super::*;
use crate::env::diskstats::DeviceIo;
use crate::record::{DeviceUse, NoDevice};

fn cell(layout: &str) -> Cell {
    (layout.to_string(), 100, 8)
}

fn io(reads: u64, writes: u64) -> DeviceIo {
    DeviceIo {
        reads,
        read_bytes: reads * 8192,
        read_ms: reads,
        writes,
        write_bytes: writes * 8192,
        write_ms: writes,
        flushes: Some(writes / 10),
        io_ticks_ms: 100,
        time_in_queue_ms: 150,
    }
}

/// A run of tpcb-like on lab_ext4 with its indexes on lab_ram and pg_wal
/// on the data folder's disk, which pg_default shares.
fn run(layout: &str, ext4: Option<DeviceIo>, vda: DeviceIo, tx: i64) -> RunFigures {
    RunFigures {
        cell: cell(layout),
        duration_s: 1.0,
        transactions: Some(tx),
        checkpoints: Some(0),
        wal_bytes: Some(600.0 * tx as f64),
        n_tup_upd: Some(3 * tx),
        n_tup_hot_upd: Some(2 * tx),
        device_io: Some(RunDeviceIo {
            elapsed_ms: 1000,
            devices: vec![
                DeviceUse {
                    device: "loop3".into(),
                    dev: "7:3".into(),
                    tablespaces: vec!["lab_ext4".into()],
                    io: ext4,
                    unread: ext4.is_none().then(|| "gone".to_string()),
                },
                DeviceUse {
                    device: "vda".into(),
                    dev: "254:0".into(),
                    tablespaces: vec!["pg_default".into(), "pg_wal".into()],
                    io: Some(vda),
                    unread: None,
                },
            ],
            no_device: vec![NoDevice {
                tablespace: "lab_ram".into(),
                fs_type: Some("tmpfs".into()),
                why: None,
            }],
        }),
        data_bytes: Some(16 << 20),
        memory_bytes: Some(24 << 30),
        memory_source: Some("MemTotal".into()),
        checkpoint_timeout: Some("5min".into()),
        max_wal_size: Some("1GB".into()),
    }
}

#[test]
fn a_device_per_row_its_tablespaces_beside_it() {
    let runs = [
        run("A", Some(io(10, 400)), io(0, 1000), 1000),
        run("A", Some(io(30, 600)), io(2, 1200), 3000),
        run("B", None, io(0, 900), 2000),
    ];
    let rows = per_device(&runs);
    let names: Vec<(&str, Option<&str>, i32)> = rows
        .iter()
        .map(|r| (r.cell.0.as_str(), r.device.as_deref(), r.runs))
        .collect();
    assert_eq!(
        names,
        [
            ("A", Some("loop3"), 2),
            ("A", Some("vda"), 2),
            ("A", None, 2),
            // a device a run could not read is in no mean
            ("B", Some("loop3"), 0),
            ("B", Some("vda"), 1),
            ("B", None, 1)
        ]
    );
    let a = &rows[0];
    assert_eq!(a.tablespaces, ["lab_ext4"]);
    assert_eq!((a.reads, a.writes), (Some(20.0), Some(500.0)));
    // per transaction: the runs' sums over their transactions
    assert_eq!(a.reads_per_tx, Some(40.0 / 4000.0));
    assert_eq!(a.writes_per_tx, Some(0.25));
    assert_eq!(a.read_bytes, Some(20.0 * 8192.0));
    assert_eq!(a.flushes, Some(50.0));
    assert_eq!((a.busy_ms, a.queue_ms), (Some(100.0), Some(150.0)));
    assert_eq!(a.busy_pct, Some(10.0));
    // a device two tablespaces share is one row, counted once
    assert_eq!(rows[1].tablespaces, ["pg_default", "pg_wal"]);
    assert_eq!(rows[1].writes, Some(1100.0));
    // tmpfs: a row that says so, without figures
    assert_eq!(rows[2].tablespaces, ["lab_ram"]);
    assert_eq!((rows[2].reads, rows[2].busy_pct), (None, None));
    assert_eq!((rows[3].reads, rows[3].reads_per_tx), (None, None));
    // runs stored before 0.12.0 have no device_io: no row
    let old = RunFigures {
        device_io: None,
        ..run("C", None, io(0, 0), 10)
    };
    assert!(per_device(&[old]).is_empty());
}

#[test]
fn hot_ratio_checkpoints_and_device_reads_of_a_cell() {
    let runs = [
        run("A", Some(io(10, 400)), io(0, 1000), 1000),
        run("A", Some(io(30, 600)), io(2, 1200), 3000),
    ];
    let f = cell_figures(&runs.iter().collect::<Vec<_>>());
    assert_eq!(f.hot_ratio, Some(2.0 / 3.0));
    assert_eq!(f.checkpoints_per_run, Some(0.0));
    // every device of a run, each once: (10 + 0 + 30 + 2) / 4000
    assert_eq!(f.device_reads_per_tx, Some(42.0 / 4000.0));
    // a run with a device not read has no figure of its own
    let b = run("B", None, io(5, 900), 2000);
    let f = cell_figures(&[&runs[0], &b]);
    assert_eq!(f.device_reads_per_tx, Some(10.0 / 1000.0));
    // nothing counted: NULLs, not zeros
    let none = RunFigures {
        cell: cell("C"),
        ..Default::default()
    };
    let f = cell_figures(&[&none]);
    assert_eq!(
        (f.hot_ratio, f.checkpoints_per_run, f.device_reads_per_tx),
        (None, None, None)
    );
    assert!(f.caveats.is_empty());
}

#[test]
fn a_writing_workload_without_a_checkpoint() {
    let runs = [
        run("A", Some(io(0, 400)), io(0, 1000), 1000),
        run("A", Some(io(0, 400)), io(0, 1000), 1000),
    ];
    let f = cell_figures(&runs.iter().collect::<Vec<_>>());
    assert_eq!(
        f.caveats[0].text(),
        "a writing workload, and none of its 2 measured runs (1 s each) contained a checkpoint: \
         neither checkpoint_timeout (5min) nor max_wal_size (1GB) was reached within a run, so no run \
         paid for writing its dirty pages back to the storage; make the runs longer than \
         checkpoint_timeout, or lower checkpoint_timeout or max_wal_size (ALTER SYSTEM, then \
         pg_reload_conf()) while the experiment runs"
    );
    // one run with a checkpoint: no caveat
    let with = RunFigures {
        checkpoints: Some(1),
        ..runs[1].clone()
    };
    let f = cell_figures(&[&runs[0], &with]);
    assert!(!f
        .caveats
        .iter()
        .any(|c| matches!(c, Caveat::NoCheckpoint { .. })));
    assert_eq!(f.checkpoints_per_run, Some(0.5));
    // a read-only workload (select-only) needs none
    let read_only = RunFigures {
        n_tup_upd: Some(0),
        n_tup_hot_upd: Some(0),
        wal_bytes: Some(4_000.0),
        ..runs[0].clone()
    };
    let f = cell_figures(&[&read_only]);
    assert!(!read_only.writing());
    assert!(!f
        .caveats
        .iter()
        .any(|c| matches!(c, Caveat::NoCheckpoint { .. })));
    // an insert-only one writes WAL without updating
    let inserts = RunFigures {
        n_tup_upd: Some(0),
        wal_bytes: Some(150_000.0),
        ..runs[0].clone()
    };
    assert!(inserts.writing());
    // checkpoints not counted: nothing to say
    let unknown = RunFigures {
        checkpoints: None,
        ..runs[0].clone()
    };
    assert!(!cell_figures(&[&unknown])
        .caveats
        .iter()
        .any(|c| matches!(c, Caveat::NoCheckpoint { .. })));
    // runs of 40 s under a 30 s checkpoint_timeout each held one, though
    // none was counted: a checkpoint behind its schedule reports when it
    // ends, after such a run (seen on a 200-I/O drive)
    let long = RunFigures {
        duration_s: 40.0,
        checkpoint_timeout: Some("30s".into()),
        ..runs[0].clone()
    };
    let f = cell_figures(&[&long, &long]);
    assert!(!f
        .caveats
        .iter()
        .any(|c| matches!(c, Caveat::NoCheckpoint { .. })));
    assert_eq!(f.checkpoints_per_run, Some(0.0));
    // shorter than the timeout: said
    let short = RunFigures {
        duration_s: 20.0,
        ..long.clone()
    };
    assert!(cell_figures(&[&short])
        .caveats
        .iter()
        .any(|c| matches!(c, Caveat::NoCheckpoint { .. })));
}

#[test]
fn time_settings_in_seconds() {
    assert_eq!(setting_seconds("30s"), Some(30.0));
    assert_eq!(setting_seconds("5min"), Some(300.0));
    assert_eq!(setting_seconds("1h"), Some(3600.0));
    assert_eq!(setting_seconds("500ms"), Some(0.5));
    assert_eq!(setting_seconds("2d"), Some(172_800.0));
    assert_eq!(setting_seconds("90"), Some(90.0));
    assert_eq!(setting_seconds("soon"), None);
    assert_eq!(setting_seconds("3 weeks"), None);
}

#[test]
fn data_that_fits_in_memory() {
    let r = run("A", Some(io(3, 400)), io(0, 1000), 1000);
    let f = cell_figures(&[&r]);
    let text = f.caveats[1].text();
    assert_eq!(
        text,
        "pgbench's data (16.0 MB) fits in the server's memory (24.0 GB, MemTotal): the runs may have \
         measured the page cache, not the storage; device reads per transaction: 0.0030"
    );
    // under a memory limit, said so; larger data than memory: no caveat
    let limited = RunFigures {
        memory_bytes: Some(256 << 20),
        memory_source: Some("memory limit".into()),
        ..r.clone()
    };
    assert!(cell_figures(&[&limited]).caveats[1]
        .text()
        .contains("(256.0 MB, its memory group's limit)"));
    let large = RunFigures {
        data_bytes: Some(1 << 30),
        ..limited.clone()
    };
    assert_eq!(cell_figures(&[&large]).caveats.len(), 1);
    // the largest data against the smallest memory
    assert_eq!(cell_figures(&[&limited, &large]).caveats.len(), 1);
    // no device counters (a run before 0.12.0 sizes nothing either)
    let unread = RunFigures {
        device_io: None,
        ..r.clone()
    };
    assert!(cell_figures(&[&unread]).caveats[1]
        .text()
        .ends_with("device reads per transaction: unknown (no device counters)"));
    assert_eq!(per_tx_text(0.0), "0");
    assert_eq!(per_tx_text(30.0 / 20400.0), "0.0015");
    assert_eq!(per_tx_text(0.0147), "0.015");
    assert_eq!(per_tx_text(0.5), "0.50");
    assert_eq!(per_tx_text(1e-9), "0.000000");
    assert_eq!(per_tx_text(2.345), "2.35");
    assert_eq!(per_tx_text(123.4), "123");
}

#[test]
fn an_experiment_says_each_caveat_once() {
    let a = run("A", Some(io(3, 400)), io(0, 1000), 1000);
    let b = RunFigures {
        cell: ("B".into(), 100, 1),
        ..run("B", Some(io(0, 400)), io(0, 1000), 2000)
    };
    let cells: Vec<(Cell, CellFigures)> = [&a, &b]
        .iter()
        .map(|r| (r.cell.clone(), cell_figures(&[r])))
        .collect();
    let said = experiment_caveats(&cells);
    assert_eq!(said.len(), 2, "{said:?}");
    assert!(
        said[0].starts_with(
            "a writing workload in A (8 clients, fillfactor 100) and B (1 client, fillfactor 100), \
             and none of the 2 measured runs (1 s each) contained a checkpoint"
        ),
        "{}",
        said[0]
    );
    assert_eq!(
        said[1],
        "pgbench's data (16.0 MB) fits in the server's memory (24.0 GB, MemTotal): the runs may have \
         measured the page cache, not the storage; device reads per transaction: 0.0030 in A (8 clients, \
         fillfactor 100), 0 in B (1 client, fillfactor 100)"
    );
    assert!(experiment_caveats(&[]).is_empty());
}
