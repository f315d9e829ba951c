//! The design's published figures, its intervals against SciPy, and its
//! error rates and power by simulation (seeded: the same figures every
//! run; `cargo test -p storlab-core sequential -- --nocapture` prints them).

use super::*;
use crate::stats::{difference, welch, Sides};

fn design(min: i64, max: i64, e: f64) -> Design {
    Design::new(min, max, e).unwrap()
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

// Lan & DeMets (1983), Pocock-type α(t) = α ln(1 + (e − 1) t):
// α(0.2) = 0.014770, α(0.5) = 0.031006, α(1) = α (SciPy/NumPy figures).
#[test]
fn the_spending_function_spends_alpha_by_the_last_look() {
    assert!(close(spent(0.05, 0.2), 0.0147697, 1e-7));
    assert!(close(spent(0.05, 0.5), 0.0310057, 1e-7));
    assert!(close(spent(0.05, 1.0), 0.05, 1e-15));
    assert_eq!(spent(0.05, 0.0), 0.0);
    for (min, max, m) in [(2, 10, 1), (2, 5, 3), (3, 3, 2), (2, 100, 7)] {
        let d = design(min, max, 5.0);
        let sum: f64 = (1..=max as u32 + 1).map(|n| d.look_alpha(n, m)).sum();
        assert!(
            close(sum, ALPHA / m as f64, 1e-15),
            "{min} {max} {m}: {sum}"
        );
        assert_eq!(d.look_alpha(min as u32 - 1, m), 0.0);
        assert_eq!(d.look_alpha(max as u32 + 1, m), 0.0);
    }
    // the first look may spend what the looks it skipped did not
    assert!(close(design(2, 10, 5.0).look_alpha(2, 1), 0.0147697, 1e-7));
}

#[test]
fn bad_designs_are_refused() {
    for (min, max, e) in [
        (1, 5, 5.0),
        (3, 2, 5.0),
        (2, 101, 5.0),
        (2, 5, 0.0),
        (2, 5, 100.0),
        (2, 5, -1.0),
        (2, 5, f64::NAN),
    ] {
        let err = Design::new(min, max, e).unwrap_err();
        assert_eq!(
            err.state,
            crate::error::SqlState::InvalidParameterValue,
            "{min} {max} {e}"
        );
    }
    assert!(Design::new(2, 2, 0.5).is_ok());
}

// SciPy: a = ln [1000, 1040, 980], b = ln [1250, 1190, 1230]; Welch
// diff 0.195031, se 0.0226696, df 3.86862; the look after repetition 3 of
// (2, 10) spends α(0.3) − α(0.2) = 0.00601703; t.ppf(1 − 0.00601703/2,
// 3.86862) = 5.461238; interval 100 (exp(diff ∓ q se) − 1) =
// [7.382474, 37.552464] %.
#[test]
fn the_interval_of_a_look_agrees_with_scipy() {
    let d = design(2, 10, 5.0);
    let base = [(1, 1000.0), (2, 1040.0), (3, 980.0)];
    let other = [(1, 1250.0), (2, 1190.0), (3, 1230.0)];
    assert!(close(d.look_alpha(3, 1), 0.00601703, 1e-8));
    // after 2: not yet (df about 1, a wide interval)
    let v = verdict(&d, 1, &base, &other, 2);
    assert_eq!(v.decision, Decision::Open);
    assert_eq!(v.look, Some(2));
    let v = verdict(&d, 1, &base, &other, 3);
    assert_eq!(v.decision, Decision::Different);
    assert_eq!(v.look, Some(3));
    assert!(close(v.ci_low_pct.unwrap(), 7.382474, 1e-5), "{v:?}");
    assert!(close(v.ci_high_pct.unwrap(), 37.552464, 1e-5), "{v:?}");
    // frozen at its look: later repetitions do not change it
    let more_b = [&base[..], &[(4, 1300.0)]].concat();
    let more_o = [&other[..], &[(4, 900.0)]].concat();
    assert_eq!(verdict(&d, 1, &more_b, &more_o, 4), v);
    // with more comparisons each spends less: a wider interval, and with
    // fifty the same data decide nothing yet
    let two = verdict(&d, 2, &base, &other, 3);
    assert!(
        two.ci_low_pct.unwrap() < v.ci_low_pct.unwrap()
            && two.ci_high_pct.unwrap() > v.ci_high_pct.unwrap()
    );
    assert_eq!(verdict(&d, 50, &base, &other, 3).decision, Decision::Open);
}

#[test]
fn a_single_look_at_the_whole_alpha_is_welchs_test() {
    // min = max: one look at 1 − α, the fixed design's 95 % interval
    let d = design(3, 3, 1.0);
    let cases = [
        ([100.0, 110.0, 105.0], [120.0, 125.0, 130.0]),
        ([100.0, 110.0, 105.0], [104.0, 116.0, 99.0]),
        ([500.0, 520.0, 480.0], [455.0, 470.0, 430.0]),
    ];
    for (a, b) in cases {
        let la: Vec<f64> = a.iter().map(|x: &f64| x.ln()).collect();
        let lb: Vec<f64> = b.iter().map(|x: &f64| x.ln()).collect();
        let p = welch(&lb, &la).unwrap().p(Sides::Two);
        let rep = |xs: [f64; 3]| {
            xs.iter()
                .enumerate()
                .map(|(i, x)| (i as i32 + 1, *x))
                .collect::<Vec<_>>()
        };
        let v = verdict(&d, 1, &rep(a), &rep(b), 3);
        assert_eq!(
            v.decision == Decision::Different,
            p < ALPHA,
            "{a:?} {b:?} p {p}"
        );
    }
}

// SciPy, sql/sequential.sql's "twin": base ln [1000, 1012, 995], twin
// ln [1003, 1009, 998], the look after 3 of (2, 6) for one of 3
// comparisons: α_3 = 0.00278803; Welch df 3.373470; the two one-sided
// tests at α_3 each: t.ppf(1 − α_3, df) = 6.324194; the interval
// [−3.589387, +3.933253] % lies inside ±5 %: equivalent.
#[test]
fn equivalence_is_two_one_sided_tests_at_the_looks_level() {
    let d = design(2, 6, 5.0);
    let base = [(1, 1000.0), (2, 1012.0), (3, 995.0)];
    let twin = [(1, 1003.0), (2, 1009.0), (3, 998.0)];
    assert!(close(d.look_alpha(3, 3), 0.00278803, 1e-8));
    let v = verdict(&d, 3, &base, &twin, 3);
    assert_eq!((v.decision, v.look), (Decision::Equivalent, Some(3)));
    assert!(close(v.ci_low_pct.unwrap(), -3.589387, 1e-5), "{v:?}");
    assert!(close(v.ci_high_pct.unwrap(), 3.933253, 1e-5), "{v:?}");
    // a margin of 3.8 %: the one-sided test on the high side fails
    assert_eq!(
        verdict(&design(2, 6, 3.8), 3, &base, &twin, 3).decision,
        Decision::Open
    );
}

#[test]
fn equivalent_when_the_interval_is_inside_the_margin() {
    let d = design(2, 10, 5.0);
    let base: Vec<(i32, f64)> = (1..=4)
        .map(|r| (r, [1000.0, 1004.0, 998.0, 1001.0][r as usize - 1]))
        .collect();
    let same: Vec<(i32, f64)> = (1..=4)
        .map(|r| (r, [1002.0, 999.0, 1003.0, 997.0][r as usize - 1]))
        .collect();
    let v = verdict(&d, 1, &base, &same, 4);
    assert_eq!(v.decision, Decision::Equivalent, "{v:?}");
    assert!(v.ci_low_pct.unwrap() > -5.0 && v.ci_high_pct.unwrap() < 5.0);
    // a margin of 0.1 % cannot be shown with this noise: still open
    let strict = design(2, 10, 0.1);
    assert_eq!(
        verdict(&strict, 1, &base, &same, 4).decision,
        Decision::Open
    );
    // and undecided once the maximum is done
    let short = design(2, 4, 0.1);
    let v = verdict(&short, 1, &base, &same, 4);
    assert_eq!(v.decision, Decision::Undecided);
    assert_eq!(v.look, Some(4));
}

#[test]
fn looks_need_both_sides_and_two_runs() {
    let d = design(2, 10, 5.0);
    // no look yet
    let v = verdict(&d, 1, &[(1, 100.0)], &[(1, 50.0)], 1);
    assert_eq!(
        (v.decision, v.look, v.ci_low_pct),
        (Decision::Open, None, None)
    );
    // repetition 2 of the other side missing (an invalid run): no look at 2
    let v = verdict(&d, 1, &[(1, 100.0), (2, 101.0)], &[(1, 50.0)], 2);
    assert_eq!(v.look, None);
    // zero variance on both sides: the interval is the point itself
    let v = verdict(&d, 1, &[(1, 100.0), (2, 100.0)], &[(1, 50.0), (2, 50.0)], 2);
    assert_eq!(v.decision, Decision::Different);
    assert!(close(v.ci_low_pct.unwrap(), -50.0, 1e-9));
    let v = verdict(
        &d,
        1,
        &[(1, 100.0), (2, 100.0)],
        &[(1, 100.0), (2, 100.0)],
        2,
    );
    assert_eq!(v.decision, Decision::Equivalent);
}

// ---- simulations ----

/// Run-to-run noise of log TPS.
#[derive(Clone, Copy)]
enum Noise {
    /// normal, this standard deviation (≈ the CV)
    Normal(f64),
    /// Student t with 3 degrees of freedom scaled to this standard
    /// deviation: a run now and then far off (a warm cache, a checkpoint)
    Heavy(f64),
}

struct Sim {
    rng: fastrand::Rng,
}

impl Sim {
    fn new(seed: u64) -> Self {
        Sim {
            rng: fastrand::Rng::with_seed(seed),
        }
    }
    fn normal(&mut self) -> f64 {
        // Box–Muller
        let u = 1.0 - self.rng.f64();
        let v = self.rng.f64();
        (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
    }
    fn noise(&mut self, n: Noise) -> f64 {
        match n {
            Noise::Normal(s) => s * self.normal(),
            Noise::Heavy(s) => {
                let chi2: f64 = (0..3).map(|_| self.normal().powi(2)).sum();
                // t3 has variance 3
                s * self.normal() / (chi2 / 3.0).sqrt() / 3f64.sqrt()
            }
        }
    }
    /// `max` runs of a cell whose true TPS is 1000 × ratio
    fn runs(&mut self, ratio: f64, noise: Noise, max: u32) -> Vec<(i32, f64)> {
        (1..=max as i32)
            .map(|r| (r, 1000.0 * ratio * self.noise(noise).exp()))
            .collect()
    }
}

/// What many simulated experiments answered, for one comparison kind.
#[derive(Default)]
struct Tally {
    n: usize,
    different_up: usize,
    different_down: usize,
    equivalent: usize,
    /// repetitions each experiment ran (its last comparison's look)
    repetitions: usize,
    /// experiments with any wrong "different" (for families)
    any_different: usize,
}

impl Tally {
    fn share(&self, k: usize) -> f64 {
        k as f64 / self.n as f64
    }
    fn mean_repetitions(&self) -> f64 {
        self.repetitions as f64 / self.n as f64
    }
}

/// Wilson's 95 % interval of a binomial share.
fn wilson(k: usize, n: usize) -> (f64, f64) {
    let (k, n, z) = (k as f64, n as f64, 1.959964);
    let p = k / n;
    let c = (p + z * z / (2.0 * n)) / (1.0 + z * z / n);
    let h = z / (1.0 + z * z / n) * (p * (1.0 - p) / n + z * z / (4.0 * n * n)).sqrt();
    (c - h, c + h)
}

fn pct(k: usize, n: usize) -> String {
    let (lo, hi) = wilson(k, n);
    format!(
        "{:.2} % (95 % CI {:.2} to {:.2})",
        100.0 * k as f64 / n as f64,
        100.0 * lo,
        100.0 * hi
    )
}

/// `runs` sequential experiments of a baseline and `ratios.len()` layouts
/// (true TPS ratio each), stopping each comparison at its decision and the
/// experiment when all are decided or at the maximum.
fn sequential(d: &Design, ratios: &[f64], noise: Noise, runs: usize, seed: u64) -> Vec<Tally> {
    let mut sim = Sim::new(seed);
    let mut tallies: Vec<Tally> = ratios.iter().map(|_| Tally::default()).collect();
    for _ in 0..runs {
        let base = sim.runs(1.0, noise, d.max_repetitions);
        let mut reps = d.min_repetitions;
        let mut any = false;
        let mut outcomes = Vec::new();
        for &ratio in ratios {
            let other = sim.runs(ratio, noise, d.max_repetitions);
            let v = verdict(d, ratios.len(), &base, &other, d.max_repetitions);
            reps = reps.max(if v.decision.decided() {
                v.look.unwrap()
            } else {
                d.max_repetitions
            });
            any |= v.decision == Decision::Different;
            outcomes.push(v);
        }
        for (t, v) in tallies.iter_mut().zip(&outcomes) {
            t.n += 1;
            t.repetitions += reps as usize;
            t.any_different += any as usize;
            match v.decision {
                Decision::Different if v.ci_low_pct.unwrap() > 0.0 => t.different_up += 1,
                Decision::Different => t.different_down += 1,
                Decision::Equivalent => t.equivalent += 1,
                _ => {}
            }
        }
    }
    tallies
}

/// The fixed design with the same maximum: Welch's test at 95 % (and, for
/// equivalence, the two one-sided tests: the 90 % interval inside the
/// margin) after all `max` repetitions.
fn fixed(max: u32, e: f64, ratio: f64, noise: Noise, runs: usize, seed: u64) -> Tally {
    let mut sim = Sim::new(seed);
    let mut t = Tally::default();
    let (lo, hi) = ((1.0 - e / 100.0).ln(), (1.0 + e / 100.0).ln());
    for _ in 0..runs {
        let a: Vec<f64> = sim.runs(1.0, noise, max).iter().map(|r| r.1.ln()).collect();
        let b: Vec<f64> = sim
            .runs(ratio, noise, max)
            .iter()
            .map(|r| r.1.ln())
            .collect();
        let w = welch(&b, &a).unwrap();
        let d = difference(&b, &a).unwrap();
        let q = student_t_quantile(0.95, d.df);
        t.n += 1;
        t.repetitions += max as usize;
        if d.diff - q * d.se > lo && d.diff + q * d.se < hi {
            t.equivalent += 1;
        } else if w.significant(ALPHA, Sides::Two) {
            if w.t > 0.0 {
                t.different_up += 1
            } else {
                t.different_down += 1
            }
        }
    }
    t
}

/// The run-to-run noise of the storage-bound lab, as the standard
/// deviation of log TPS: bench/power's A/A experiments (3 repetitions of
/// 10 s, tpcb-like, 8 clients) gave estimates with a standard deviation of
/// 7.2 %, a run-to-run CV of 7.2 % × √(3/2) = 8.8 % (studies/README.md,
/// "Power"). Longer runs are steadier; the error rates do not depend on it
/// (the intervals are scale-free), the power does.
const LAB_CV: f64 = 0.088;
const EXPERIMENTS: usize = 10_000;

#[test]
fn aa_experiments_call_at_most_5_percent_different_over_all_looks() {
    for (noise, what) in [
        (Noise::Normal(LAB_CV), "normal"),
        (Noise::Heavy(LAB_CV), "heavy-tailed (t3)"),
    ] {
        let d = design(2, 10, 5.0);
        let t = &sequential(&d, &[1.0], noise, EXPERIMENTS, 7)[0];
        let wrong = t.different_up + t.different_down;
        println!(
            "A/A, {what} noise sd {:.1} %, looks after 2..10 repetitions: wrong \"different\" {}; mean repetitions {:.2}",
            LAB_CV * 100.0,
            pct(wrong, t.n),
            t.mean_repetitions()
        );
        assert!(t.share(wrong) <= ALPHA, "{}", pct(wrong, t.n));
    }
}

#[test]
fn peeking_at_every_repetition_without_the_design_inflates_false_positives() {
    // what the design prevents: Welch's p < 0.05 looked at after each of
    // repetitions 2..10, stopping at the first
    let mut sim = Sim::new(11);
    let (mut naive, n) = (0, EXPERIMENTS);
    for _ in 0..n {
        let a = sim.runs(1.0, Noise::Normal(LAB_CV), 10);
        let b = sim.runs(1.0, Noise::Normal(LAB_CV), 10);
        let hit = (2..=10).any(|k| {
            let la: Vec<f64> = a[..k].iter().map(|r| r.1.ln()).collect();
            let lb: Vec<f64> = b[..k].iter().map(|r| r.1.ln()).collect();
            welch(&lb, &la).is_some_and(|w| w.significant(ALPHA, Sides::Two))
        });
        naive += hit as usize;
    }
    println!(
        "A/A, stopping at the first p < 0.05 of 9 looks (no design): wrong \"different\" {}",
        pct(naive, n)
    );
    assert!(naive as f64 / n as f64 > 2.0 * ALPHA);
}

/// a's mean over b's with the pooled variance of Student's two-sample t
/// (n_a + n_b − 2 degrees of freedom), as group-sequential t-tests use it:
/// what Welch's degrees of freedom are shown against.
fn pooled_difference(a: &[f64], b: &[f64]) -> Difference {
    let mean = |xs: &[f64]| xs.iter().sum::<f64>() / xs.len() as f64;
    let ss = |xs: &[f64], m: f64| xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>();
    let (ma, mb) = (mean(a), mean(b));
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let df = na + nb - 2.0;
    let s2 = (ss(a, ma) + ss(b, mb)) / df;
    Difference {
        diff: ma - mb,
        se: (s2 * (1.0 / na + 1.0 / nb)).sqrt(),
        df,
    }
}

#[test]
fn unequal_noise_keeps_the_rate_with_welch_not_with_the_pooled_t() {
    // one layout four times as noisy as the other (3 % against 12 %: a
    // cell after a move against one after its own run, as bench/sequential
    // saw). Welch's degrees of freedom keep the level; the pooled t's
    // (n_a + n_b − 2) would not, at the same looks and levels
    let d = design(2, 10, 5.0);
    let mut sim = Sim::new(31);
    let (mut wrong, mut pooled_wrong) = (0, 0);
    for _ in 0..EXPERIMENTS {
        let base = sim.runs(1.0, Noise::Normal(0.03), 10);
        let other = sim.runs(1.0, Noise::Normal(0.12), 10);
        wrong += (verdict(&d, 1, &base, &other, 10).decision == Decision::Different) as usize;
        let pooled = (2..=10).any(|n| {
            let p = pooled_difference(&up_to(&other, n), &up_to(&base, n));
            judge(&d, &p, d.look_alpha(n, 1)) == Decision::Different
        });
        pooled_wrong += pooled as usize;
    }
    println!(
        "A/A, noise sd 3 % against 12 %: wrong \"different\" {} (with the pooled t instead: {})",
        pct(wrong, EXPERIMENTS),
        pct(pooled_wrong, EXPERIMENTS)
    );
    assert!(wrong as f64 / EXPERIMENTS as f64 <= ALPHA);
    assert!(pooled_wrong as f64 / EXPERIMENTS as f64 > ALPHA);
}

#[test]
fn several_layouts_keep_the_familywise_rate() {
    // three layouts against one baseline, none different: Bonferroni over
    // the three comparisons keeps any wrong "different" at 5 %
    let d = design(2, 10, 5.0);
    let t = sequential(&d, &[1.0, 1.0, 1.0], Noise::Normal(LAB_CV), EXPERIMENTS, 13);
    println!(
        "A/A/A/A (3 comparisons): any wrong \"different\" {}",
        pct(t[0].any_different, t[0].n)
    );
    assert!(t[0].share(t[0].any_different) <= ALPHA);
}

#[test]
fn a_difference_at_the_margin_is_called_equivalent_at_most_5_percent() {
    // equivalence_pct 5 with noise low enough that equivalence is often
    // shown: true differences of exactly −5 % and +5 % are not equivalent
    let noise = Noise::Normal(0.02);
    let d = design(2, 10, 5.0);
    for ratio in [0.95, 1.05] {
        let t = &sequential(&d, &[ratio], noise, EXPERIMENTS, 17)[0];
        println!(
            "true difference {:+.0} % at the 5 % margin, noise sd 2 %: wrong \"equivalent\" {}",
            (ratio - 1.0) * 100.0,
            pct(t.equivalent, t.n)
        );
        assert!(t.share(t.equivalent) <= ALPHA);
    }
    // and a true zero with that noise is shown equivalent most of the time
    let t = &sequential(&d, &[1.0], noise, 2_000, 19)[0];
    println!(
        "A/A, noise sd 2 %: \"equivalent\" {}, mean repetitions {:.2}",
        pct(t.equivalent, t.n),
        t.mean_repetitions()
    );
    assert!(t.share(t.equivalent) > 0.8);
}

#[test]
fn power_and_repetitions_against_the_fixed_design() {
    // the lab's noise; effects of 5, 10 and 20 % (layout B slower), and
    // the half-IOPS twin of the lab (about −47 %, studies/README.md)
    println!(
        "noise sd {:.1} %, at most 10 repetitions (the fixed design: all 10)",
        LAB_CV * 100.0
    );
    println!("effect   sequential: found  wrong sign  mean reps   fixed: found");
    let d = design(2, 10, 5.0);
    let mut rows = Vec::new();
    for (i, effect) in [-5.0, -10.0, -20.0, -47.0].into_iter().enumerate() {
        let ratio = 1.0 + effect / 100.0;
        let s = &sequential(&d, &[ratio], Noise::Normal(LAB_CV), 2_000, 23 + i as u64)[0];
        let f = fixed(10, 5.0, ratio, Noise::Normal(LAB_CV), 2_000, 29 + i as u64);
        println!(
            "{effect:+5.0} %   {:>16.1} %  {:>8.2} %  {:>9.2}   {:>10.1} %",
            100.0 * s.share(s.different_down),
            100.0 * s.share(s.different_up),
            s.mean_repetitions(),
            100.0 * f.share(f.different_down)
        );
        // never the wrong sign beyond the design's error
        assert!(s.share(s.different_up) <= ALPHA / 2.0, "{effect}");
        rows.push((
            effect,
            s.share(s.different_down),
            s.mean_repetitions(),
            f.share(f.different_down),
        ));
    }
    // 20 %: found nearly as often as the fixed design, in under 60 % of its repetitions
    let (_, s20, reps20, f20) = rows[2];
    assert!(s20 >= f20 - 0.1 && reps20 <= 6.0, "{s20} {f20} {reps20}");
    // the half-IOPS twin: answered at about the first look
    let (_, s47, reps47, _) = rows[3];
    assert!(s47 > 0.99 && reps47 < 3.5, "{s47} {reps47}");
}
