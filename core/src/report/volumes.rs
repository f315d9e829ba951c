//! What compare_tablespaces() measures and reads: volumes (tablespaces on
//! one filesystem are measured once), the repetitions of one suite call on
//! each, and how long measuring them may take.
//!
//! A figure comes from the probes of one call of the suite, never from a
//! mix of the newest probe of each item (a suite, a check() and a
//! profile() from different times, under different loads, ranked as one).

use std::time::Duration;

use super::compare::{estimate, Estimate, Scores, Wanted};
use crate::probe::Workload;
use crate::request::probe::{SuiteItem, SUITE};

/// The volume of each target: the index of the first target on the same
/// filesystem (`devices`: the device number of each target's folder; None
/// where it could not be read, which is a volume of its own).
pub fn volumes(devices: &[Option<u64>]) -> Vec<usize> {
    devices
        .iter()
        .enumerate()
        .map(|(i, d)| match d {
            Some(d) => devices.iter().position(|x| x == &Some(*d)).unwrap_or(i),
            None => i,
        })
        .collect()
}

/// One stored probe of the standard suite: which call measured it, and its
/// figures. `At` is when it started (a timestamp of the caller's kind).
#[derive(Debug, Clone, PartialEq)]
pub struct Rep<At> {
    pub call: String,
    /// its item's index in SUITE
    pub item: usize,
    pub lat_p50_us: Option<f64>,
    pub lat_p99_us: Option<f64>,
    pub iops: f64,
    pub mib_s: f64,
    pub at: At,
}

/// The SUITE item a stored probe measured: one worker at the item's depth,
/// or (where io_uring is off) as many psync workers as that depth.
pub fn item_of(
    workload: &str,
    block_size: i32,
    sync_method: &str,
    workers: i32,
    iodepth: i32,
) -> Option<usize> {
    SUITE.iter().position(|i: &SuiteItem| {
        i.workload.as_str() == workload
            && i.block_size as i32 == block_size
            && i.sync.as_str() == sync_method
            && ((workers == 1 && iodepth as u32 == i.iodepth)
                || (i.iodepth > 1 && workers as u32 == i.iodepth && iodepth == 1))
    })
}

/// The items a ranked figure is made of.
pub fn items_for(w: Wanted) -> Vec<usize> {
    SUITE
        .iter()
        .enumerate()
        .filter(|(_, i)| {
            i.iodepth == 1
                && match i.workload {
                    Workload::Wal => w.wal,
                    Workload::Randread => w.randread,
                    Workload::Seqread | Workload::Seqwrite => w.bulk,
                    Workload::Randwrite => false,
                }
        })
        .map(|(k, _)| k)
        .collect()
}

/// Repetitions of each item.
fn counts<At>(reps: &[&Rep<At>]) -> [usize; SUITE.len()] {
    let mut n = [0; SUITE.len()];
    for r in reps {
        n[r.item] += 1;
    }
    n
}

/// Whether a call's repetitions hold every item, the ranked ones `min_reps` times.
pub fn complete<At>(reps: &[&Rep<At>], min_reps: usize) -> bool {
    let n = counts(reps);
    let ranked = items_for(Wanted {
        wal: true,
        randread: true,
        bulk: true,
    });
    n.iter().all(|&k| k > 0) && ranked.iter().all(|&k| n[k] >= min_reps)
}

/// One volume's figures: each the mean of its repetitions in one call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct VolumeFigures<At> {
    pub randread_p50_us: Option<f64>,
    pub randread_iops: Option<f64>,
    pub randread_iops_qd32: Option<f64>,
    pub randwrite_p99_us: Option<f64>,
    pub wal_commit_p50_us: Option<f64>,
    /// the ranked figures (bulk is ranked on write + read of each round)
    /// with their intervals
    pub randread_p99_us: Option<Estimate>,
    pub wal_commit_p99_us: Option<Estimate>,
    pub seqwrite_mib_s: Option<Estimate>,
    pub seqread_mib_s: Option<Estimate>,
    /// the repetitions of the ranked figures
    pub scores: Scores,
    /// when the first of its probes started
    pub first_at: Option<At>,
    /// repetitions of the ranked figures (the fewest of them)
    pub repetitions: usize,
}

fn mean_of<At>(reps: &[&Rep<At>], item: usize, f: impl Fn(&Rep<At>) -> Option<f64>) -> Vec<f64> {
    reps.iter()
        .filter(|r| r.item == item)
        .filter_map(|r| f(r))
        .collect()
}

fn mean(v: &[f64]) -> Option<f64> {
    estimate(v).map(|e| e.mean)
}

/// A volume's figures from its repetitions of one call (in the order measured).
pub fn figures<At: PartialOrd + Copy>(reps: &[&Rep<At>]) -> VolumeFigures<At> {
    let pos = |w: Workload, depth: u32| {
        SUITE
            .iter()
            .position(|i| i.workload == w && (i.iodepth == 1) == (depth == 1))
            .expect("the suite has every workload at depth 1 and randread queued")
    };
    let (read, read_qd, write, wal, seqw, seqr) = (
        pos(Workload::Randread, 1),
        pos(Workload::Randread, 32),
        pos(Workload::Randwrite, 1),
        pos(Workload::Wal, 1),
        pos(Workload::Seqwrite, 1),
        pos(Workload::Seqread, 1),
    );
    let p50 = |r: &Rep<At>| r.lat_p50_us;
    let p99 = |r: &Rep<At>| r.lat_p99_us;
    let iops = |r: &Rep<At>| Some(r.iops);
    let mib = |r: &Rep<At>| Some(r.mib_s);
    let seqw_v = mean_of(reps, seqw, mib);
    let seqr_v = mean_of(reps, seqr, mib);
    // bulk pairs the n-th write with the n-th read: one round's throughput
    let bulk: Vec<f64> = seqw_v.iter().zip(&seqr_v).map(|(w, r)| w + r).collect();
    let scores = Scores {
        randread_p99_us: mean_of(reps, read, p99),
        wal_commit_p99_us: mean_of(reps, wal, p99),
        bulk_mib_s: bulk,
        seqwrite_mib_s: seqw_v.clone(),
        seqread_mib_s: seqr_v.clone(),
        volatile: false,
        wal_only: false,
    };
    let repetitions = [
        scores.randread_p99_us.len(),
        scores.wal_commit_p99_us.len(),
        scores.bulk_mib_s.len(),
    ]
    .into_iter()
    .min()
    .unwrap_or(0);
    VolumeFigures {
        randread_p50_us: mean(&mean_of(reps, read, p50)),
        randread_iops: mean(&mean_of(reps, read, iops)),
        randread_iops_qd32: mean(&mean_of(reps, read_qd, iops)),
        randwrite_p99_us: mean(&mean_of(reps, write, p99)),
        wal_commit_p50_us: mean(&mean_of(reps, wal, p50)),
        randread_p99_us: estimate(&scores.randread_p99_us),
        wal_commit_p99_us: estimate(&scores.wal_commit_p99_us),
        seqwrite_mib_s: estimate(&seqw_v),
        seqread_mib_s: estimate(&seqr_v),
        scores,
        first_at: reps
            .iter()
            .map(|r| r.at)
            .reduce(|a, b| if b < a { b } else { a }),
        repetitions,
    }
}

/// What a probe costs beyond its duration: the device lock, the scratch
/// file's creation and removal, storing the row (measured on the lab: a
/// call of 100 probes of 1 s took 0.3 s a probe more than their durations
/// and fills at the full sequential write speed; under another load a
/// reviewer's calls took 1.6 s a probe beyond their durations, where 0.25 s
/// and half the write speed had stated 0.9 s: the bound is set for a
/// server at work).
pub const PROBE_OVERHEAD: Duration = Duration::from_millis(500);

/// The share of a volume's measured sequential write speed a scratch file
/// is assumed to fill at (buffered, then flushed and dropped from the
/// cache, where the probe wrote with O_DIRECT; a quarter, since the speed
/// stored was measured by O_DIRECT writes, maybe on an idle server).
pub const FILL_SHARE: f64 = 0.25;

/// The most a measuring call may take: `volumes` volumes, each the whole
/// suite `min_reps` times and its ranked figures up to `max_reps` times,
/// every probe at most `duration` plus PROBE_OVERHEAD after filling its
/// scratch file of `file_bytes` at FILL_SHARE of `fill_mib_s` (the
/// volume's last measured sequential write speed, or a cautious guess).
pub fn most_time(
    fill_mib_s: &[f64],
    min_reps: usize,
    max_reps: usize,
    duration: Duration,
    file_bytes: u64,
) -> Duration {
    let ranked = items_for(Wanted {
        wal: true,
        randread: true,
        bulk: true,
    })
    .len();
    let probes = SUITE.len() * min_reps + ranked * max_reps.saturating_sub(min_reps);
    fill_mib_s
        .iter()
        .map(|&rate| probes_time(probes, duration, file_bytes, rate))
        .sum()
}

/// The most `probes` probes of at most `duration` each may take on one
/// volume: each PROBE_OVERHEAD more, after filling its scratch file of
/// `file_bytes` at FILL_SHARE of `fill_mib_s` (profile()'s bound, and each
/// volume's part of [`most_time`]).
pub fn probes_time(
    probes: usize,
    duration: Duration,
    file_bytes: u64,
    fill_mib_s: f64,
) -> Duration {
    let fill = file_bytes as f64 / (1024.0 * 1024.0) / (fill_mib_s * FILL_SHARE).max(1.0);
    (duration + PROBE_OVERHEAD).mul_f64(probes as f64)
        + Duration::from_secs_f64(fill * probes as f64)
}

#[cfg(test)]
mod tests;
