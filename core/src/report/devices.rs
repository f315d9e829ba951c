//! What an experiment's runs did beneath PostgreSQL, per (layout,
//! fillfactor, clients) cell: the block devices' reads and writes
//! (`bench_runs.device_io`) as means per run and per transaction, the HOT
//! ratio of pgbench's updates, the checkpoints per run, and the caveats a
//! DBA must read before trusting the cell's TPS: a writing workload whose
//! runs contained no checkpoint, and pgbench's data small enough for the
//! server's memory (PostgreSQL counts a page-cache hit as a read: only the
//! devices' own counters tell the storage from the cache).

use std::collections::BTreeMap;

use crate::record::RunDeviceIo;
use crate::relocate::human_bytes;
use crate::report::io::Cell;

/// WAL per transaction from which a run counts as writing without having
/// updated pgbench's tables (an insert-only script): more than the
/// background's WAL (autovacuum, hint bits) over a read-only run's
/// transactions, less than one row inserted and committed.
pub const WRITING_WAL_PER_TX: f64 = 100.0;

/// One measured run of a cell as the report reads it from
/// storlab.bench_runs (its pooled runs only).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunFigures {
    pub cell: Cell,
    pub duration_s: f64,
    pub transactions: Option<i64>,
    /// checkpoints begun during the run (`server_checkpoints`)
    pub checkpoints: Option<i64>,
    pub wal_bytes: Option<f64>,
    pub n_tup_upd: Option<i64>,
    pub n_tup_hot_upd: Option<i64>,
    pub device_io: Option<RunDeviceIo>,
    /// pgbench's relations' logical bytes at the run's start (`layout`)
    pub data_bytes: Option<i64>,
    pub memory_bytes: Option<i64>,
    pub memory_source: Option<String>,
    /// as its sessions had them (`settings`)
    pub checkpoint_timeout: Option<String>,
    pub max_wal_size: Option<String>,
}

impl RunFigures {
    /// Did the run write: it updated pgbench's tables, or wrote at least
    /// [`WRITING_WAL_PER_TX`] bytes of WAL per transaction.
    pub fn writing(&self) -> bool {
        self.n_tup_upd.is_some_and(|n| n > 0)
            || match (self.wal_bytes, self.transactions) {
                (Some(w), Some(t)) if t > 0 => w / t as f64 >= WRITING_WAL_PER_TX,
                _ => false,
            }
    }
}

/// One row of experiment_devices(): one block device of one cell (or a
/// tablespace of it on no block device: `device` None, no figures), with
/// means per run of the runs that read its counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceRow {
    pub cell: Cell,
    pub device: Option<String>,
    pub tablespaces: Vec<String>,
    pub runs: i32,
    pub reads: Option<f64>,
    pub writes: Option<f64>,
    pub reads_per_tx: Option<f64>,
    pub writes_per_tx: Option<f64>,
    pub read_bytes: Option<f64>,
    pub write_bytes: Option<f64>,
    pub flushes: Option<f64>,
    pub busy_ms: Option<f64>,
    pub queue_ms: Option<f64>,
    /// the share of the runs' time the device was busy (io_ticks over the
    /// time between the readings), in %
    pub busy_pct: Option<f64>,
}

#[derive(Default)]
struct Sums {
    tablespaces: Vec<String>,
    runs: i32,
    transactions: i64,
    reads: u64,
    writes: u64,
    read_bytes: u64,
    write_bytes: u64,
    flushes: Option<u64>,
    flush_runs: i32,
    busy_ms: u64,
    queue_ms: u64,
    elapsed_ms: u64,
}

/// The rows of each cell in `runs`, cells in the order they first come,
/// each cell's devices by name, then its tablespaces on no device. A
/// device a run could not read is left out of that run's means.
pub fn per_device(runs: &[RunFigures]) -> Vec<DeviceRow> {
    let mut cells: Vec<&Cell> = Vec::new();
    let mut sums: BTreeMap<(&Cell, bool, String), Sums> = BTreeMap::new();
    for r in runs {
        let Some(dio) = &r.device_io else { continue };
        if !cells.contains(&&r.cell) {
            cells.push(&r.cell);
        }
        for d in &dio.devices {
            let s = sums.entry((&r.cell, false, d.device.clone())).or_default();
            for t in &d.tablespaces {
                if !s.tablespaces.contains(t) {
                    s.tablespaces.push(t.clone());
                }
            }
            let Some(io) = d.io else { continue };
            s.runs += 1;
            s.transactions += r.transactions.unwrap_or(0);
            s.reads += io.reads;
            s.writes += io.writes;
            s.read_bytes += io.read_bytes;
            s.write_bytes += io.write_bytes;
            if let Some(f) = io.flushes {
                s.flushes = Some(s.flushes.unwrap_or(0) + f);
                s.flush_runs += 1;
            }
            s.busy_ms += io.io_ticks_ms;
            s.queue_ms += io.time_in_queue_ms;
            s.elapsed_ms += dio.elapsed_ms;
        }
        for n in &dio.no_device {
            let s = sums
                .entry((&r.cell, true, n.tablespace.clone()))
                .or_default();
            if s.tablespaces.is_empty() {
                s.tablespaces.push(n.tablespace.clone());
            }
            s.runs += 1;
        }
    }
    let mut out = Vec::new();
    for cell in cells {
        for ((c, none, key), s) in &sums {
            if *c != cell {
                continue;
            }
            let mean = |v: u64| (s.runs > 0 && !none).then(|| v as f64 / s.runs as f64);
            let per_tx =
                |v: u64| (s.transactions > 0 && !none).then(|| v as f64 / s.transactions as f64);
            out.push(DeviceRow {
                cell: cell.clone(),
                device: (!none).then(|| key.clone()),
                tablespaces: s.tablespaces.clone(),
                runs: s.runs,
                reads: mean(s.reads),
                writes: mean(s.writes),
                reads_per_tx: per_tx(s.reads),
                writes_per_tx: per_tx(s.writes),
                read_bytes: mean(s.read_bytes),
                write_bytes: mean(s.write_bytes),
                flushes: s
                    .flushes
                    .filter(|_| s.flush_runs > 0)
                    .map(|f| f as f64 / s.flush_runs as f64),
                busy_ms: mean(s.busy_ms),
                queue_ms: mean(s.queue_ms),
                busy_pct: (s.elapsed_ms > 0 && !none)
                    .then(|| 100.0 * s.busy_ms as f64 / s.elapsed_ms as f64),
            });
        }
    }
    out
}

/// Something a DBA must know before trusting a cell's figures.
#[derive(Debug, Clone, PartialEq)]
pub enum Caveat {
    /// A writing workload whose measured runs began no checkpoint.
    NoCheckpoint {
        runs: usize,
        duration_s: f64,
        checkpoint_timeout: Option<String>,
        max_wal_size: Option<String>,
    },
    /// pgbench's data fits in the memory the server could cache it in.
    InMemory {
        data_bytes: i64,
        memory_bytes: i64,
        memory_source: Option<String>,
        device_reads_per_tx: Option<f64>,
    },
}

/// A figure per transaction as a sentence gives it: two significant
/// digits below 1 (0.0015, 0.25), two decimals below 100; 0 as 0.
pub fn per_tx_text(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 1.0 {
        format!("{x:.2}")
    } else if x > 0.0 {
        let decimals = ((-x.log10()).floor() as usize + 2).min(6);
        format!("{x:.decimals$}")
    } else {
        "0".to_string()
    }
}

/// A time setting as SHOW prints it (`30s`, `5min`, `1h`, `500ms`, `1d`),
/// in seconds; None when it reads otherwise.
pub fn setting_seconds(v: &str) -> Option<f64> {
    let v = v.trim();
    let split = v.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(v.len());
    let (n, unit) = v.split_at(split);
    let n: f64 = n.parse().ok()?;
    let scale = match unit.trim() {
        "ms" => 0.001,
        "" | "s" => 1.0,
        "min" => 60.0,
        "h" => 3600.0,
        "d" => 86400.0,
        _ => return None,
    };
    Some(n * scale)
}

fn setting(name: &str, v: &Option<String>) -> String {
    match v {
        Some(v) => format!("{name} ({v})"),
        None => name.to_string(),
    }
}

/// A writing workload in `whose` (empty: the cell's own) whose `runs`
/// measured runs began no checkpoint.
fn no_checkpoint_text(
    whose: &str,
    runs: usize,
    duration_s: f64,
    checkpoint_timeout: &Option<String>,
    max_wal_size: &Option<String>,
) -> String {
    format!(
        "a writing workload{whose}, and none of {its} {runs} measured run{s} ({duration_s} s each) contained a checkpoint: neither {ct} nor {mws} was reached within a run, so no run paid for writing its dirty pages back to the storage; make the runs longer than checkpoint_timeout, or lower checkpoint_timeout or max_wal_size (ALTER SYSTEM, then pg_reload_conf()) while the experiment runs",
        its = if whose.is_empty() { "its" } else { "the" },
        s = if runs == 1 { "" } else { "s" },
        ct = setting("checkpoint_timeout", checkpoint_timeout),
        mws = setting("max_wal_size", max_wal_size),
    )
}

/// pgbench's data fits in memory; `reads`: the device reads per
/// transaction, as said.
fn in_memory_text(
    data_bytes: i64,
    memory_bytes: i64,
    memory_source: &Option<String>,
    reads: &str,
) -> String {
    format!(
        "pgbench's data ({}) fits in the server's memory ({}{}): the runs may have measured the page cache, not the storage; device reads per transaction: {reads}",
        human_bytes(data_bytes),
        human_bytes(memory_bytes),
        match memory_source.as_deref() {
            Some("memory limit") => ", its memory group's limit",
            Some("MemTotal") => ", MemTotal",
            _ => "",
        },
    )
}

fn reads_text(device_reads_per_tx: Option<f64>) -> String {
    device_reads_per_tx.map_or("unknown (no device counters)".to_string(), per_tx_text)
}

impl Caveat {
    pub fn text(&self) -> String {
        match self {
            Caveat::NoCheckpoint {
                runs,
                duration_s,
                checkpoint_timeout,
                max_wal_size,
            } => no_checkpoint_text("", *runs, *duration_s, checkpoint_timeout, max_wal_size),
            Caveat::InMemory {
                data_bytes,
                memory_bytes,
                memory_source,
                device_reads_per_tx,
            } => in_memory_text(
                *data_bytes,
                *memory_bytes,
                memory_source,
                &reads_text(*device_reads_per_tx),
            ),
        }
    }
}

/// What the report says of one cell beside its TPS, from its pooled runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellFigures {
    /// HOT updates over updates of pgbench's tables (None: no update
    /// counted)
    pub hot_ratio: Option<f64>,
    /// checkpoints begun per measured run (None: not counted)
    pub checkpoints_per_run: Option<f64>,
    /// reads of the block devices beneath the runs' tablespaces, each
    /// device once, per transaction (None: no run with every device read)
    pub device_reads_per_tx: Option<f64>,
    pub caveats: Vec<Caveat>,
}

/// The figures and caveats of one cell from its pooled runs.
pub fn cell_figures(runs: &[&RunFigures]) -> CellFigures {
    let both: Vec<(i64, i64)> = runs
        .iter()
        .filter_map(|r| Some((r.n_tup_upd?, r.n_tup_hot_upd?)))
        .collect();
    let (upd, hot) = both.iter().fold((0, 0), |(u, h), (a, b)| (u + a, h + b));
    let counted: Vec<i64> = runs.iter().filter_map(|r| r.checkpoints).collect();
    let (mut reads, mut tx) = (0u64, 0i64);
    for r in runs {
        if let (Some(n), Some(t)) = (r.device_io.as_ref().and_then(|d| d.reads()), r.transactions) {
            reads += n;
            tx += t;
        }
    }
    let device_reads_per_tx = (tx > 0).then(|| reads as f64 / tx as f64);
    let mut caveats = Vec::new();
    let first = runs.iter().find(|r| r.checkpoints.is_some());
    // A checkpoint behind its schedule (slow storage) reports itself to the
    // statistics only when it ends, so a run shorter than its write time
    // counts none though one began in it. A writing run longer than
    // checkpoint_timeout holds one, whatever was counted.
    let timeout_s = first
        .and_then(|r| r.checkpoint_timeout.as_deref())
        .and_then(setting_seconds);
    let outlasts_timeout = timeout_s
        .is_some_and(|t| runs.iter().any(|r| r.duration_s > t));
    if !counted.is_empty()
        && counted.iter().all(|&c| c == 0)
        && runs.iter().any(|r| r.writing())
        && !outlasts_timeout
    {
        caveats.push(Caveat::NoCheckpoint {
            runs: counted.len(),
            duration_s: runs.iter().map(|r| r.duration_s).fold(0.0, f64::max),
            checkpoint_timeout: first.and_then(|r| r.checkpoint_timeout.clone()),
            max_wal_size: first.and_then(|r| r.max_wal_size.clone()),
        });
    }
    // the largest data against the smallest memory of the runs
    let data = runs.iter().filter_map(|r| r.data_bytes).max();
    let memory = runs
        .iter()
        .filter_map(|r| Some((r.memory_bytes?, r.memory_source.clone())))
        .min_by_key(|(m, _)| *m);
    if let (Some(data), Some((memory, source))) = (data, memory) {
        if data <= memory {
            caveats.push(Caveat::InMemory {
                data_bytes: data,
                memory_bytes: memory,
                memory_source: source,
                device_reads_per_tx,
            });
        }
    }
    CellFigures {
        hot_ratio: (upd > 0).then(|| hot as f64 / upd as f64),
        checkpoints_per_run: (!counted.is_empty())
            .then(|| counted.iter().sum::<i64>() as f64 / counted.len() as f64),
        device_reads_per_tx,
        caveats,
    }
}

/// How a sentence names a cell.
pub fn cell_label(cell: &Cell) -> String {
    format!(
        "{} ({} client{}, fillfactor {})",
        cell.0,
        cell.2,
        if cell.2 == 1 { "" } else { "s" },
        cell.1
    )
}

/// The caveats of a whole experiment, each kind said once: the cells a
/// missing checkpoint concerns, and for data that fits in memory the
/// largest data and the smallest memory, with each cell's device reads
/// per transaction. What its job keeps in its detail and `CALL
/// storlab.experiment` prints.
pub fn experiment_caveats(cells: &[(Cell, CellFigures)]) -> Vec<String> {
    let mut out = Vec::new();
    let (mut names, mut runs, mut duration) = (Vec::new(), 0, 0.0_f64);
    let mut settings = None;
    for (c, f) in cells {
        for k in &f.caveats {
            if let Caveat::NoCheckpoint {
                runs: n,
                duration_s,
                checkpoint_timeout,
                max_wal_size,
            } = k
            {
                names.push(cell_label(c));
                runs += n;
                duration = duration.max(*duration_s);
                settings.get_or_insert((checkpoint_timeout.clone(), max_wal_size.clone()));
            }
        }
    }
    if let Some((ct, mws)) = settings {
        let whose = format!(" in {}", join(&names));
        out.push(no_checkpoint_text(&whose, runs, duration, &ct, &mws));
    }
    let mut data = None;
    let mut memory: Option<(i64, Option<String>)> = None;
    let mut each = Vec::new();
    for (c, f) in cells {
        for k in &f.caveats {
            if let Caveat::InMemory {
                data_bytes,
                memory_bytes,
                memory_source,
                device_reads_per_tx,
            } = k
            {
                data = Some(data.unwrap_or(0).max(*data_bytes));
                if memory.as_ref().is_none_or(|(m, _)| memory_bytes < m) {
                    memory = Some((*memory_bytes, memory_source.clone()));
                }
                each.push(format!(
                    "{} in {}",
                    device_reads_per_tx.map_or("unknown".to_string(), per_tx_text),
                    cell_label(c)
                ));
            }
        }
    }
    if let (Some(data), Some((memory, source))) = (data, memory) {
        out.push(in_memory_text(data, memory, &source, &each.join(", ")));
    }
    out
}

/// "a", "a and b", "a, b and c"
fn join(names: &[String]) -> String {
    match names {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

#[cfg(test)]
mod tests;
