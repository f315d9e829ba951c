//! Sequential experiments: look after every repetition, stop a comparison
//! as soon as it is answered, and keep the error rates of a single look.
//!
//! Looking after each repetition and stopping at the first p < 0.05 calls
//! a difference that does not exist far more often than one time in
//! twenty (five looks about triple it). The method here is the published
//! one for this: **repeated confidence intervals** (Jennison & Turnbull,
//! "Interim analyses: the repeated confidence interval approach", JRSS B
//! 51 (1989) 305–361), which decide difference or equivalence from the
//! same intervals ("Sequential equivalence testing and repeated confidence
//! intervals", Biometrics 49 (1993) 31–43), with the error spent over the
//! looks by the **Pocock-type spending function** α(t) = α · ln(1 + (e − 1)
//! t) of Lan & DeMets ("Discrete sequential boundaries for clinical
//! trials", Biometrika 70 (1983) 659–663), t being the share of the
//! maximum repetitions done. Pocock-type spends early, which is what an
//! experiment that wants to stop early needs (O'Brien–Fleming keeps almost
//! nothing for the first looks).
//!
//! - **The intervals.** After repetition n (n from `min_repetitions`),
//!   each layout's cell is compared with the baseline's: the difference
//!   of their mean log TPS (so a ratio, shown as an improvement in %),
//!   with Welch's standard error and degrees of freedom, at the level
//!   1 − α_n, where α_n = (α(n / max) − α(prev / max)) / m is the error
//!   the look may spend (prev: the previous look, 0 at the first) and m
//!   the number of comparisons of the experiment.
//! - **Why Welch's, not the pooled t** of Jennison & Turnbull's
//!   group-sequential t-tests (2000, §3.8). With as many runs a side the
//!   standard error is the same; the degrees of freedom are not. When one
//!   layout's runs scatter and the other's agree (a cell right after a
//!   move against one after its own run), Welch's fall towards those of
//!   the noisy side alone, which is the truth of it: the pooled t claimed
//!   more and called 6.7 % of A/A pairs with a fourfold ratio of standard
//!   deviations different (simulated in the tests); Welch's stay under
//!   5 %. The price: a first look can decide nothing when one side's two
//!   runs disagree, whatever the effect.
//! - **Assumption.** Log TPS of a cell's runs roughly normal and
//!   independent (the alternating order keeps a slow drift out of the
//!   differences); the tests check heavy tails too.

use serde::{Deserialize, Serialize};

use crate::error::{invalid, Result};
use crate::stats::{difference, student_t_cdf, student_t_quantile, Difference, ALPHA};

/// The defaults of a sequential design.
pub const DEFAULT_MIN_REPETITIONS: u32 = 2;
pub const DEFAULT_MAX_REPETITIONS: u32 = 10;
pub const DEFAULT_EQUIVALENCE_PCT: f64 = 5.0;
/// The most repetitions an experiment may have (experiment_start's bound).
pub const MOST_REPETITIONS: u32 = 100;

/// How a sequential experiment stops.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Design {
    /// The first look comes after this many repetitions (at least 2: a
    /// look needs two runs a side for a variance).
    pub min_repetitions: u32,
    /// The experiment stops after this many, answered or not.
    pub max_repetitions: u32,
    /// Differences within ± this many percent do not matter.
    pub equivalence_pct: f64,
}

/// α(t): the error the Pocock-type function has spent by the share
/// `t` (0..1) of the maximum information.
pub fn spent(alpha: f64, t: f64) -> f64 {
    alpha * (1.0 + (std::f64::consts::E - 1.0) * t.clamp(0.0, 1.0)).ln()
}

impl Design {
    /// A design, checked (22023 with what is allowed).
    pub fn new(min_repetitions: i64, max_repetitions: i64, equivalence_pct: f64) -> Result<Self> {
        if min_repetitions < 2 || min_repetitions > MOST_REPETITIONS as i64 {
            return Err(invalid(format!(
                "min_repetitions must be between 2 and {MOST_REPETITIONS}, not {min_repetitions}: a look needs two runs of each layout"
            )));
        }
        if max_repetitions < min_repetitions || max_repetitions > MOST_REPETITIONS as i64 {
            return Err(invalid(format!(
                "max_repetitions must be between min_repetitions ({min_repetitions}) and {MOST_REPETITIONS}, not {max_repetitions}"
            )));
        }
        if !(equivalence_pct > 0.0 && equivalence_pct < 100.0) {
            return Err(invalid(format!(
                "equivalence_pct must be above 0 and below 100, not {equivalence_pct}: differences within ± that many percent count as none"
            )));
        }
        Ok(Design {
            min_repetitions: min_repetitions as u32,
            max_repetitions: max_repetitions as u32,
            equivalence_pct,
        })
    }

    /// The error the look after `repetition` may spend, two-sided, for one
    /// of `comparisons`; 0 where there is no look.
    pub fn look_alpha(&self, repetition: u32, comparisons: usize) -> f64 {
        if repetition < self.min_repetitions || repetition > self.max_repetitions {
            return 0.0;
        }
        let max = self.max_repetitions as f64;
        let prev = if repetition == self.min_repetitions {
            0.0
        } else {
            (repetition - 1) as f64 / max
        };
        (spent(ALPHA, repetition as f64 / max) - spent(ALPHA, prev)) / comparisons.max(1) as f64
    }

    /// The margin on the log scale: ln(1 − E/100), ln(1 + E/100).
    fn bounds(&self) -> (f64, f64) {
        let e = self.equivalence_pct / 100.0;
        ((1.0 - e).ln(), (1.0 + e).ln())
    }
}

/// Where one comparison stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Not decided, repetitions left.
    Open,
    /// The interval excludes 0: the sign is proven.
    Different,
    /// The interval lies within ±equivalence_pct.
    Equivalent,
    /// max_repetitions done, neither.
    Undecided,
}

impl Decision {
    pub fn as_str(self) -> &'static str {
        match self {
            Decision::Open => "open",
            Decision::Different => "different",
            Decision::Equivalent => "equivalent",
            Decision::Undecided => "undecided",
        }
    }

    pub fn decided(self) -> bool {
        matches!(self, Decision::Different | Decision::Equivalent)
    }
}

/// A comparison's decision, the repetition of the look that made it (for
/// open and undecided ones the last look made, None before the first),
/// and that look's repeated confidence interval of the improvement over
/// the baseline, in percent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Verdict {
    pub decision: Decision,
    pub look: Option<u32>,
    pub ci_low_pct: Option<f64>,
    pub ci_high_pct: Option<f64>,
}

/// The two one-sided tail probabilities beyond which the interval at
/// `level` (1 − alpha) excludes a point: P(T > (diff − x)/se) < alpha/2.
fn beyond(d: &Difference, x: f64, alpha: f64) -> bool {
    // x below the interval: (diff − x)/se > t_q; above: (x − diff)/se > t_q
    let z = (d.diff - x).abs();
    if d.se == 0.0 {
        return z > 0.0;
    }
    student_t_cdf(-z / d.se, d.df) < alpha / 2.0
}

/// The decision one look makes at its level `alpha` (without computing
/// the intervals: the tail probabilities need no quantile): equivalent
/// when both one-sided tests at `alpha` reject a difference beyond the
/// margin (the 1 − 2 alpha interval inside it), different when the
/// 1 − alpha interval excludes 0.
fn judge(design: &Design, d: &Difference, alpha: f64) -> Decision {
    let (lo, hi) = design.bounds();
    let one_sided = 2.0 * alpha;
    let inside = d.diff > lo && d.diff < hi && beyond(d, lo, one_sided) && beyond(d, hi, one_sided);
    if inside {
        Decision::Equivalent
    } else if beyond(d, 0.0, alpha) {
        Decision::Different
    } else {
        Decision::Open
    }
}

/// The interval at 1 − `alpha` of the improvement in percent.
fn interval_pct(d: &Difference, alpha: f64) -> (f64, f64) {
    let half = if d.se == 0.0 {
        0.0
    } else {
        student_t_quantile(1.0 - alpha / 2.0, d.df) * d.se
    };
    let pct = |x: f64| (x.exp() - 1.0) * 100.0;
    (pct(d.diff - half), pct(d.diff + half))
}

/// Log TPS of the runs of repetitions 1..=n.
fn up_to(runs: &[(i32, f64)], n: u32) -> Vec<f64> {
    runs.iter()
        .filter(|(r, tps)| *r >= 1 && *r as u32 <= n && *tps > 0.0)
        .map(|(_, tps)| tps.ln())
        .collect()
}

/// One comparison: the baseline's and the other layout's measured runs as
/// (repetition, TPS), looked at after each repetition from the design's
/// first up to `done` (the repetitions finished for the whole experiment).
/// A look is made where both have a run of that repetition (an invalid run
/// skips the look, whose error is then left unspent). The first look that
/// decides freezes the verdict.
pub fn verdict(
    design: &Design,
    comparisons: usize,
    base: &[(i32, f64)],
    other: &[(i32, f64)],
    done: u32,
) -> Verdict {
    let has = |runs: &[(i32, f64)], n: u32| runs.iter().any(|(r, _)| *r as u32 == n);
    // (look, its difference, its alpha): the interval is computed once,
    // for the look the verdict reports (a quantile costs a few CDFs)
    let mut last: Option<(u32, Difference, f64)> = None;
    let mut decision = if done >= design.max_repetitions {
        Decision::Undecided
    } else {
        Decision::Open
    };
    for n in design.min_repetitions..=done.min(design.max_repetitions) {
        if !has(base, n) || !has(other, n) {
            continue;
        }
        let Some(d) = difference(&up_to(other, n), &up_to(base, n)) else {
            continue;
        };
        let alpha = design.look_alpha(n, comparisons);
        last = Some((n, d, alpha));
        let at = judge(design, &d, alpha);
        if at.decided() {
            decision = at;
            break;
        }
    }
    match last {
        Some((n, d, alpha)) => {
            // the interval that decided: TOST's for an equivalence
            let level = if decision == Decision::Equivalent {
                2.0 * alpha
            } else {
                alpha
            };
            let (lo, hi) = interval_pct(&d, level);
            Verdict {
                decision,
                look: Some(n),
                ci_low_pct: Some(lo),
                ci_high_pct: Some(hi),
            }
        }
        None => Verdict {
            decision,
            look: None,
            ci_low_pct: None,
            ci_high_pct: None,
        },
    }
}

#[cfg(test)]
mod tests;
