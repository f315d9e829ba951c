//! The statistics behind comparing repeated benchmark runs (say the TPS of
//! several pgbench runs on layout A against layout B): a summary with a 95 %
//! confidence interval per side, Welch's t-test between the sides, the
//! improvement in percent, and a text bar to draw it with. Pure Rust, no
//! PostgreSQL.
//!
//! The special functions are written out here rather than taken from a crate:
//! they are a few dozen lines, and a crate would cost build time for them.
//! - ln Γ: the Lanczos approximation with the coefficients of Numerical
//!   Recipes, 3rd ed., §6.1 (`gammln`, g = 671/128, 14 terms), about 1e-15
//!   relative.
//! - The regularized incomplete beta function I_x(a, b): its continued
//!   fraction as in Numerical Recipes §6.4 (`betai`/`betacf`), evaluated with
//!   the modified Lentz method, on whichever side of the symmetry
//!   I_x(a, b) = 1 − I_{1−x}(b, a) the fraction converges fast.
//! - Student's t distribution: its CDF through I_x, and its quantile by a
//!   Newton iteration on that CDF kept inside a bisection bracket.
//!
//! Accuracy, checked against scipy and, where scipy itself is off (very
//! near t = 0, and in very far tails), against 50-digit mpmath: better
//! than 1e-12 relative up to 1000 degrees of freedom, about 1e-10 at 1e5.
//! The log-gamma differences in front of the continued fraction lose digits
//! as df grows, and the fraction needs on the order of √df steps, so far
//! beyond that expect less, and a NaN where the fraction does not converge,
//! never a made-up figure.
//!
//! Where a figure cannot be had (one run, no baseline), the answer is None,
//! and the SQL layer shows NULL for it: no invented numbers.
//!
//! A leaf: it imports nothing of storlab. Every significance storlab states
//! (experiment reports, compare_samples, regressions(), advice) is
//! [`Welch::significant`] at [`ALPHA`], two-sided or one-sided as the
//! question asks.

/// The level every storlab test is judged at: a difference is called
/// significant when its p-value is below it.
pub const ALPHA: f64 = 0.05;

/// The alternative a test looks for, between the `a` and `b` of
/// [`welch`]`(a, b)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sides {
    /// a differs from b, either way (experiments, compare_samples, advice)
    Two,
    /// a is greater than b (regressions(): now is worse than the baseline)
    Greater,
    /// a is less than b
    Less,
}

/// Mean, sample standard deviation and the 95 % confidence interval of the
/// mean of a set of runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    pub n: usize,
    pub mean: f64,
    /// Sample standard deviation (divisor n − 1); None for a single run,
    /// which says nothing about the spread.
    pub stddev: Option<f64>,
    /// mean ± t_{0.975, n−1} · s/√n (Student's t); None below two runs.
    pub ci95_low: Option<f64>,
    pub ci95_high: Option<f64>,
}

/// Welch's unequal-variance t-test of two sets of runs, two-sided.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    /// (mean_a − mean_b) / √(s_a²/n_a + s_b²/n_b): negative when a is lower.
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (not necessarily an integer).
    pub df: f64,
    /// Two-sided: the probability of a |t| at least this large were the
    /// means equal.
    pub p_value: f64,
}

impl Welch {
    /// The p-value for the alternative `sides`. One-sided: half the
    /// two-sided p when t points the asked way, the rest otherwise; a t of
    /// exactly 0 (no difference at all) gives 1, no evidence either way.
    pub fn p(&self, sides: Sides) -> f64 {
        let towards = match sides {
            Sides::Two => return self.p_value,
            Sides::Greater => 1.0,
            Sides::Less => -1.0,
        };
        if self.t == 0.0 {
            1.0
        } else if self.t * towards > 0.0 {
            self.p_value / 2.0
        } else {
            1.0 - self.p_value / 2.0
        }
    }

    /// Whether the difference is significant at `alpha` for `sides`.
    pub fn significant(&self, alpha: f64, sides: Sides) -> bool {
        self.p(sides) < alpha
    }
}

/// Mean and sum of squared deviations from it, in two passes: the one-pass
/// Σx² − n·mean² cancels catastrophically for TPS figures that are large
/// and close together (1500 ± 10), the two-pass form does not.
fn mean_and_ss(xs: &[f64]) -> (f64, f64) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let ss = xs.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>();
    (mean, ss)
}

/// The summary of a set of runs; None for no runs. With one run only the
/// mean is known: stddev and the interval are None. A non-finite value
/// yields non-finite figures (NaN propagates) rather than being dropped.
pub fn summarize(xs: &[f64]) -> Option<Summary> {
    let n = xs.len();
    if n == 0 {
        return None;
    }
    let (mean, ss) = mean_and_ss(xs);
    if n < 2 {
        return Some(Summary {
            n,
            mean,
            stddev: None,
            ci95_low: None,
            ci95_high: None,
        });
    }
    let s = (ss / (n - 1) as f64).sqrt();
    let half = student_t_quantile(0.975, (n - 1) as f64) * s / (n as f64).sqrt();
    Some(Summary {
        n,
        mean,
        stddev: Some(s),
        ci95_low: Some(mean - half),
        ci95_high: Some(mean + half),
    })
}

/// A figure measured several times: the mean of its repetitions, how
/// precise it is (compare_tablespaces()'s figures, advice's costs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub mean: f64,
    /// Half-width of the 95 % interval of the mean (Student's t), in
    /// percent of the mean; None with one repetition (no spread known).
    pub ci95_pct: Option<f64>,
    pub n: usize,
}

/// The estimate of a figure from its repetitions (values that are not
/// positive and finite, from a failed or empty probe, are left out); None
/// without any.
pub fn estimate(values: &[f64]) -> Option<Estimate> {
    let v = usable(values);
    let s = summarize(&v)?;
    let ci95_pct = s
        .ci95_high
        .map(|high| (high - s.mean) / s.mean * 100.0)
        .filter(|p| p.is_finite());
    Some(Estimate {
        mean: s.mean,
        ci95_pct,
        n: s.n,
    })
}

pub(crate) fn usable(values: &[f64]) -> Vec<f64> {
    values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect()
}

/// The difference of two means with its standard error and the
/// Welch–Satterthwaite degrees of freedom: what Welch's test and a Welch
/// confidence interval (diff ± t_q(df) · se) are made of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Difference {
    /// mean_a − mean_b
    pub diff: f64,
    /// √(s_a²/n_a + s_b²/n_b)
    pub se: f64,
    /// NaN when both sides have zero variance (se = 0)
    pub df: f64,
}

impl Difference {
    /// Half the width of the Welch interval of `diff` at `confidence`
    /// (0.95: the 95 % interval diff ± t_{0.975}(df) · se), with the
    /// Welch–Satterthwaite df: the interval that leaves out 0 exactly when
    /// Welch's two-sided test at 1 − confidence calls the difference
    /// significant.
    ///
    /// With zero variance on both sides (se = 0, df undefined) it is 0: the
    /// runs show no spread, as a side's own interval of zero width does
    /// ([`summarize`]), and the zero-width interval agrees with [`welch`]'s
    /// verdict then (p = 0 for different means, p = 1 for equal ones).
    pub fn half_width(&self, confidence: f64) -> f64 {
        if self.se == 0.0 {
            return 0.0;
        }
        student_t_quantile(0.5 + confidence / 2.0, self.df) * self.se
    }
}

/// [`Difference`] of a's mean over b's; None when either side has fewer
/// than two runs (no variance to estimate).
pub fn difference(a: &[f64], b: &[f64]) -> Option<Difference> {
    if a.len() < 2 || b.len() < 2 {
        return None;
    }
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (mean_a, ss_a) = mean_and_ss(a);
    let (mean_b, ss_b) = mean_and_ss(b);
    // Squared standard errors of each mean.
    let va = ss_a / (na - 1.0) / na;
    let vb = ss_b / (nb - 1.0) / nb;
    let se2 = va + vb;
    let df = if se2 == 0.0 {
        f64::NAN
    } else {
        se2 * se2 / (va * va / (na - 1.0) + vb * vb / (nb - 1.0))
    };
    Some(Difference {
        diff: mean_a - mean_b,
        se: se2.sqrt(),
        df,
    })
}

/// Welch's t-test of a against b, two-sided, with the Welch–Satterthwaite
/// degrees of freedom. None when either side has fewer than two runs (no
/// variance to estimate).
///
/// When both sides have zero variance the statistic is 0/0 or x/0, and so
/// are the degrees of freedom; the test then reports what the data say
/// without pretending to a distribution:
/// - equal means: t = 0, p = 1 (nothing tells the sides apart);
/// - different means: t = ±∞ (the sign of mean_a − mean_b), p = 0 (every
///   run of one side beats every run of the other, without any noise).
///
/// In both cases df is NaN: it is undefined, and the caller should show it
/// as NULL. With zero variance on one side only, the formulas hold as they
/// are (df becomes n − 1 of the other side).
pub fn welch(a: &[f64], b: &[f64]) -> Option<Welch> {
    let Difference { diff, se, df } = difference(a, b)?;
    let se2 = se * se;
    if se2 == 0.0 {
        return Some(if diff == 0.0 {
            Welch {
                t: 0.0,
                df: f64::NAN,
                p_value: 1.0,
            }
        } else {
            Welch {
                t: f64::INFINITY.copysign(diff),
                df: f64::NAN,
                p_value: 0.0,
            }
        });
    }
    let t = diff / se;
    // Two-sided p = P(|T| ≥ |t|) = I_x(df/2, 1/2) with x = df/(df + t²),
    // computed directly rather than as 2·(1 − cdf) so that small p values
    // keep their relative precision.
    let p_value = betai_arg(df / 2.0, 0.5, t_beta_args(t, df));
    Some(Welch { t, df, p_value })
}

/// (mean / baseline − 1) · 100: +10 means 10 % more than the baseline.
/// None when the baseline is 0 or either figure is not finite.
pub fn improvement_pct(baseline_mean: f64, mean: f64) -> Option<f64> {
    if baseline_mean == 0.0 || !baseline_mean.is_finite() || !mean.is_finite() {
        return None;
    }
    Some((mean / baseline_mean - 1.0) * 100.0)
}

/// The partial cells, 1/8 to 7/8 of a cell wide (U+258F down to U+2589).
const EIGHTHS: [char; 7] = ['▏', '▎', '▍', '▌', '▋', '▊', '▉'];

/// A bar of `value` on a scale where `max` fills `width` cells: full blocks
/// and one partial block, to the nearest eighth of a cell. Empty when value
/// or max is not positive and finite (nothing to draw, or no scale); values
/// above max are cut at `width` cells, so the bar is never longer than
/// `width` characters.
pub fn bar(value: f64, max: f64, width: usize) -> String {
    if !(value.is_finite() && value > 0.0 && max.is_finite() && max > 0.0) || width == 0 {
        return String::new();
    }
    let cells = width.saturating_mul(8);
    // Clamp the fraction first so that the product cannot overflow.
    let fraction = (value / max).min(1.0);
    let eighths = ((fraction * cells as f64).round() as usize).min(cells);
    let mut s = "█".repeat(eighths / 8);
    let rest = eighths % 8;
    if rest > 0 {
        s.push(EIGHTHS[rest - 1]);
    }
    s
}

/// ln Γ(x) for x > 0 by the Lanczos approximation, with the coefficients of
/// Numerical Recipes, 3rd ed., §6.1 (`gammln`: g = 671/128, 14 terms, about
/// 1e-15 relative). NaN for x ≤ 0 or NaN, which never arise here.
// The coefficients are kept digit for digit as published, though f64 holds
// fewer digits, so that they can be checked against the book.
#[allow(clippy::excessive_precision)]
fn ln_gamma(x: f64) -> f64 {
    const COF: [f64; 14] = [
        57.156_235_665_862_923_5,
        -59.597_960_355_475_491_2,
        14.136_097_974_741_747_1,
        -0.491_913_816_097_620_199,
        0.339_946_499_848_118_887e-4,
        0.465_236_289_270_485_756e-4,
        -0.983_744_753_048_795_646e-4,
        0.158_088_703_224_912_494e-3,
        -0.210_264_441_724_104_883e-3,
        0.217_439_618_115_212_643e-3,
        -0.164_318_106_536_763_890e-3,
        0.844_182_239_838_527_433e-4,
        -0.261_908_384_015_814_087e-4,
        0.368_991_826_595_316_234e-5,
    ];
    if x.is_nan() || x <= 0.0 {
        return f64::NAN;
    }
    let tmp = x + 5.242_187_5; // x + g + 1/2, g = 671/128
    let tmp = (x + 0.5) * tmp.ln() - tmp;
    let mut ser = 0.999_999_999_999_997_092;
    let mut y = x;
    for c in COF {
        y += 1.0;
        ser += c / y;
    }
    // 2.5066282746310005 = √(2π)
    tmp + (2.506_628_274_631_000_5 * ser / x).ln()
}

/// The regularized incomplete beta function I_x(a, b) = B_x(a, b) / B(a, b),
/// for a, b > 0 and 0 ≤ x ≤ 1 (NaN outside that). I_0 = 0, I_1 = 1.
///
/// Numerical Recipes, 3rd ed., §6.4: the continued fraction for I_x
/// converges rapidly for x < (a + 1)/(a + b + 2), and for larger x the
/// symmetry I_x(a, b) = 1 − I_{1−x}(b, a) puts it on the fast side.
pub fn betai(a: f64, b: f64, x: f64) -> f64 {
    if !(0.0..=1.0).contains(&x) {
        return f64::NAN;
    }
    let y = 1.0 - x;
    // ln(1 − x) by ln_1p while x is small: 1 − x would drop x's low digits.
    // For x ≥ ½, y = 1 − x is exact (Sterbenz) and so is ln_1p(−y).
    let ln_x = if x < 0.5 { x.ln() } else { (-y).ln_1p() };
    let ln_y = if x < 0.5 { (-x).ln_1p() } else { y.ln() };
    betai_arg(a, b, BetaArg { x, y, ln_x, ln_y })
}

/// An argument x of I_x together with y = 1 − x and both logarithms, each
/// to full relative precision. The t distribution knows all four better than
/// they follow from x alone: y = t²/(df + t²) is tiny for small t, where x
/// is 1 to the last digit, and for t beyond ~1e154 x underflows while ln x
/// is still an ordinary number (the quantile's far tail needs it there).
#[derive(Clone, Copy)]
struct BetaArg {
    x: f64,
    y: f64,
    ln_x: f64,
    ln_y: f64,
}

impl BetaArg {
    /// The same point seen from the other side, for I_y(b, a).
    fn swap(self) -> BetaArg {
        BetaArg {
            x: self.y,
            y: self.x,
            ln_x: self.ln_y,
            ln_y: self.ln_x,
        }
    }
}

fn betai_arg(a: f64, b: f64, arg: BetaArg) -> f64 {
    let BetaArg { x, y, ln_x, ln_y } = arg;
    if !(a > 0.0 && b > 0.0) || x.is_nan() || y.is_nan() {
        return f64::NAN;
    }
    if ln_x == f64::NEG_INFINITY {
        return 0.0;
    }
    if ln_y == f64::NEG_INFINITY {
        return 1.0;
    }
    // x^a y^b / B(a, b), the factor in front of the continued fraction, in
    // logarithms: each power alone may underflow.
    let front = (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * ln_x + b * ln_y).exp();
    // The fraction itself needs only x (or y), and an x that underflowed to
    // 0 gives its limit, 1, correctly.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * betacf(a, b, x) / a
    } else {
        1.0 - front * betacf(b, a, y) / b
    }
}

/// The continued fraction of I_x(a, b) (Numerical Recipes, 3rd ed., §6.4,
/// `betacf`), evaluated from the front with the modified Lentz method
/// (NR §5.2): no need to pick a depth in advance, and the tiny-value guard
/// keeps a zero denominator from stopping it. Its even and odd terms are
///   d_{2m}   =  m (b − m) x / ((a + 2m − 1)(a + 2m)),
///   d_{2m+1} = −(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1)).
/// It takes on the order of √max(a, b) steps; NaN if it has not settled
/// within MAX_ITER, rather than a value of unknown accuracy.
fn betacf(a: f64, b: f64, x: f64) -> f64 {
    const MAX_ITER: usize = 100_000;
    const EPS: f64 = 1e-16;
    const TINY: f64 = 1e-300;
    let guard = |v: f64| if v.abs() < TINY { TINY } else { v };
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 / guard(1.0 - qab * x / qap);
    let mut h = d;
    for m in 1..=MAX_ITER {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 / guard(1.0 + aa * d);
        c = guard(1.0 + aa / c);
        let del = d * c;
        h *= del;
        // Within a few ulps of 1 the last factor no longer changes h.
        if (del - 1.0).abs() <= 4.0 * EPS {
            return h;
        }
    }
    f64::NAN
}

/// x = df/(df + t²) and y = t²/(df + t²) = 1 − x, the arguments of I for
/// Student's t, with their logarithms. With u = |t|/√df they are
/// 1/(1 + u²) and u²/(1 + u²), written in u or in 1/u, whichever is at most
/// 1, so that nothing overflows, and neither is found by a subtraction
/// from 1.
fn t_beta_args(t: f64, df: f64) -> BetaArg {
    let u = t.abs() / df.sqrt();
    if u <= 1.0 {
        let u2 = u * u;
        let l = u2.ln_1p();
        BetaArg {
            x: 1.0 / (1.0 + u2),
            y: u2 / (1.0 + u2),
            ln_x: -l,
            ln_y: 2.0 * u.ln() - l,
        }
    } else {
        let r = 1.0 / u;
        let r2 = r * r;
        let l = r2.ln_1p();
        BetaArg {
            x: r2 / (1.0 + r2),
            y: 1.0 / (1.0 + r2),
            ln_x: 2.0 * r.ln() - l,
            ln_y: -l,
        }
    }
}

/// P(T > |t|) for T ~ Student's t with df degrees of freedom: ½ I_x(df/2, ½)
/// with x = df/(df + t²).
fn t_upper_tail(t: f64, df: f64) -> f64 {
    0.5 * betai_arg(df / 2.0, 0.5, t_beta_args(t, df))
}

/// P(0 < T < |t|) = ½ − P(T > |t|), by the symmetry of I written as
/// ½ I_y(½, df/2) with y = t²/(df + t²), so that it keeps its relative
/// precision for small t instead of being ½ minus nearly ½.
fn t_central(t: f64, df: f64) -> f64 {
    0.5 * betai_arg(0.5, df / 2.0, t_beta_args(t, df).swap())
}

/// The density of Student's t, the derivative Newton's method needs:
/// Γ((ν+1)/2) / (√(νπ) Γ(ν/2)) · (1 + t²/ν)^(−(ν+1)/2).
fn t_pdf(t: f64, df: f64) -> f64 {
    let ln_norm =
        ln_gamma((df + 1.0) / 2.0) - ln_gamma(df / 2.0) - 0.5 * (df * std::f64::consts::PI).ln();
    (ln_norm - (df + 1.0) / 2.0 * (t * t / df).ln_1p()).exp()
}

/// Degrees of freedom the t functions accept: positive and finite (NaN fails).
fn valid_df(df: f64) -> bool {
    df.is_finite() && df > 0.0
}

/// P(T ≤ t) for Student's t with df > 0 degrees of freedom (df need not be
/// an integer). NaN for a NaN t or a df that is not positive and finite.
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() || !valid_df(df) {
        return f64::NAN;
    }
    // Compute the smaller of the two pieces directly (the tail beyond |t|,
    // or the part between 0 and |t|) and add the other half by symmetry.
    let tail = t_upper_tail(t, df);
    if t < 0.0 {
        tail
    } else if tail < 0.25 {
        1.0 - tail
    } else {
        0.5 + t_central(t, df)
    }
}

/// The t with P(T ≤ t) = p for Student's t with df > 0 degrees of freedom:
/// −∞ for p = 0, +∞ for p = 1, NaN for p outside [0, 1] or a df that is not
/// positive and finite.
///
/// By symmetry it solves for |t| ≥ 0 either P(T > |t|) = q (q = the smaller
/// tail, when q < ¼) or P(0 < T < |t|) = ½ − q (otherwise); both targets are
/// exact in floating point and the side chosen keeps relative precision. The
/// solver is Newton's method with the density as derivative, safeguarded by a
/// bracket: a step that leaves the bracket becomes a bisection step. It stops
/// when a step changes t by less than a few ulps (about 1e-15 relative).
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    if !(0.0..=1.0).contains(&p) || !valid_df(df) {
        return f64::NAN;
    }
    if p == 0.5 {
        return 0.0;
    }
    // q: the probability of the tail t lies in, exact for any p since
    // 1 − p is exact for p in [½, 1] (Sterbenz).
    let (sign, q) = if p < 0.5 { (-1.0, p) } else { (1.0, 1.0 - p) };
    if q == 0.0 {
        return sign * f64::INFINITY;
    }
    // f(t) increases with t and is zero at the answer.
    let f = |t: f64| {
        if q < 0.25 {
            q - t_upper_tail(t, df)
        } else {
            t_central(t, df) - (0.5 - q)
        }
    };
    // Bracket: f(0) < 0; double hi until f(hi) ≥ 0.
    let (mut lo, mut hi) = (0.0_f64, 1.0_f64);
    while f(hi) < 0.0 {
        lo = hi;
        hi *= 2.0;
        if hi.is_infinite() {
            return sign * f64::INFINITY;
        }
    }
    let mut t = 0.5 * (lo + hi);
    for _ in 0..400 {
        let ft = f(t);
        if ft == 0.0 {
            break;
        }
        if ft < 0.0 {
            lo = t;
        } else {
            hi = t;
        }
        let newton = t - ft / t_pdf(t, df);
        let next = if newton.is_finite() && newton > lo && newton < hi {
            newton
        } else {
            0.5 * (lo + hi)
        };
        let step = (next - t).abs();
        t = next;
        if step <= 4.0 * f64::EPSILON * t || hi - lo <= 4.0 * f64::EPSILON * hi {
            break;
        }
    }
    sign * t
}

#[cfg(test)]
mod tests {
    use super::*;

    /// |got − want| ≤ tol · |want|, or ≤ tol when want is 0.
    fn close(got: f64, want: f64, tol: f64) {
        let scale = if want == 0.0 { 1.0 } else { want.abs() };
        assert!(
            (got - want).abs() <= tol * scale,
            "got {got:e}, want {want:e} (rel. error {:e})",
            (got - want).abs() / scale
        );
    }

    const TOL: f64 = 1e-9;

    #[test]
    fn ln_gamma_matches_scipy() {
        // Absolute tolerance near the zeros at 1 and 2, relative elsewhere.
        assert!(ln_gamma(1.0).abs() < 1e-14); // scipy.special.gammaln(1.0) = 0.0
        assert!(ln_gamma(2.0).abs() < 1e-14); // scipy.special.gammaln(2.0) = 0.0
        close(ln_gamma(0.5), 0.5723649429247, 1e-13); // scipy.special.gammaln(0.5)
        close(ln_gamma(1.5), -0.12078223763524526, 1e-13); // scipy.special.gammaln(1.5)
                                                           // scipy.special.gammaln(3.0) = 0.6931471805599453, which is ln 2
        close(ln_gamma(3.0), std::f64::consts::LN_2, 1e-13);
        close(ln_gamma(10.5), 13.940625219403763, 1e-13); // scipy.special.gammaln(10.5)
        close(ln_gamma(500.0), 2605.115850361734, 1e-13); // scipy.special.gammaln(500.0)
        close(ln_gamma(0.001), 6.907178885383853, 1e-13); // scipy.special.gammaln(0.001)
        close(ln_gamma(123.456), 469.6055471299295, 1e-13); // scipy.special.gammaln(123.456)
        assert!(ln_gamma(0.0).is_nan());
    }

    #[test]
    fn betai_matches_scipy() {
        // scipy.special.betainc(2.0, 3.0, 0.4) = 0.5247999999999999
        close(betai(2.0, 3.0, 0.4), 0.5247999999999999, TOL);
        // scipy.special.betainc(0.5, 0.5, 0.3) = 0.36901011956554536
        close(betai(0.5, 0.5, 0.3), 0.36901011956554536, TOL);
        // scipy.special.betainc(5.0, 0.5, 0.9) = 0.3166429150200122
        close(betai(5.0, 0.5, 0.9), 0.3166429150200122, TOL);
        // scipy.special.betainc(0.5, 15.0, 0.01) = 0.4139350352236643
        close(betai(0.5, 15.0, 0.01), 0.4139350352236643, TOL);
        // scipy.special.betainc(500.0, 0.5, 0.998) = 0.15719525269026086
        close(betai(500.0, 0.5, 0.998), 0.15719525269026086, TOL);
        // scipy.special.betainc(1.5, 2.25, 0.999) = 0.9999996519778719
        close(betai(1.5, 2.25, 0.999), 0.9999996519778719, TOL);
        // scipy.special.betainc(10.0, 10.0, 0.5) = 0.5
        close(betai(10.0, 10.0, 0.5), 0.5, TOL);
    }

    #[test]
    fn betai_edges() {
        // scipy.special.betainc(a, b, 0.0) = 0.0 and betainc(a, b, 1.0) = 1.0
        for (a, b) in [(0.5, 0.5), (2.0, 3.0), (500.0, 0.5)] {
            assert_eq!(betai(a, b, 0.0), 0.0);
            assert_eq!(betai(a, b, 1.0), 1.0);
        }
        assert!(betai(1.0, 1.0, -0.1).is_nan());
        assert!(betai(1.0, 1.0, 1.1).is_nan());
        assert!(betai(0.0, 1.0, 0.5).is_nan());
        assert!(betai(1.0, -1.0, 0.5).is_nan());
        assert!(betai(1.0, 1.0, f64::NAN).is_nan());
    }

    #[test]
    fn quantiles_at_0975_match_scipy() {
        for (df, want) in [
            (1.0, 12.706204736174694),    // scipy.stats.t.ppf(0.975, 1)
            (2.0, 4.302652729749462),     // scipy.stats.t.ppf(0.975, 2)
            (4.0, 2.7764451051977934),    // scipy.stats.t.ppf(0.975, 4)
            (9.0, 2.262157162798205),     // scipy.stats.t.ppf(0.975, 9)
            (30.0, 2.0422724563012378),   // scipy.stats.t.ppf(0.975, 30)
            (1000.0, 1.9623390808264083), // scipy.stats.t.ppf(0.975, 1000)
        ] {
            close(student_t_quantile(0.975, df), want, TOL);
        }
    }

    #[test]
    fn quantiles_elsewhere_match_scipy() {
        // scipy.stats.t.ppf(0.025, 9) = -2.2621571627982053
        close(student_t_quantile(0.025, 9.0), -2.2621571627982053, TOL);
        // scipy.stats.t.ppf(0.5, 5) = 0.0
        assert_eq!(student_t_quantile(0.5, 5.0), 0.0);
        // scipy.stats.t.ppf(0.9, 3) = 1.637744353696209
        close(student_t_quantile(0.9, 3.0), 1.637744353696209, TOL);
        // scipy.stats.t.ppf(0.999, 7) = 4.785289628638333
        close(student_t_quantile(0.999, 7.0), 4.785289628638333, TOL);
        // scipy.stats.t.ppf(0.6, 12) = 0.25903274567688733
        close(student_t_quantile(0.6, 12.0), 0.25903274567688733, TOL);
        // scipy.stats.t.ppf(1e-06, 3) = -103.29946778041935
        close(student_t_quantile(1e-6, 3.0), -103.29946778041935, TOL);
        // scipy.stats.t.ppf(0.75, 2.5) = 0.7850136829922992
        close(student_t_quantile(0.75, 2.5), 0.7850136829922992, TOL);
    }

    #[test]
    fn far_tails_and_the_centre() {
        // Where scipy loses digits, closed forms: df = 1 is the Cauchy
        // distribution, cdf(t) = 1/2 + atan(t)/π, ppf(p) = −1/tan(πp) for
        // p < 1/2. (scipy.stats.t.cdf(1e-8, 1) = 0.500000004743187 is off in
        // the 9th digit; scipy.stats.t.ppf(1e-300, 1) = -4.7e153 saturates.)
        // mpmath (50 digits): 0.5 + atan(1e-8)/pi = 0.50000000318309886183...
        close(student_t_cdf(1e-8, 1.0), 0.500_000_003_183_098_9, 1e-15);
        // mpmath: -1/tan(pi*1e-300) = -3.1830988618379066356e299
        close(
            student_t_quantile(1e-300, 1.0),
            -3.183_098_861_837_906_6e299,
            1e-12,
        );
        // scipy.stats.t.ppf(1e-300, 3) = -inf; the root of mpmath's
        // betainc(3/2, 1/2, 0, 3/(3+t^2), regularized=True)/2 = 1e-300 is
        // t = -1.0331108360446529e100.
        close(
            student_t_quantile(1e-300, 3.0),
            -1.033_110_836_044_653e100,
            1e-12,
        );
        // The same root for df = 0.5 is about -1.03e599: beyond f64.
        assert_eq!(student_t_quantile(1e-300, 0.5), f64::NEG_INFINITY);
        // Close to the centre, the root of mpmath's t cdf (df = 4) = 0.4999
        // is -0.00026666667061725468 (scipy.stats.t.ppf gives
        // -0.00026666667103737794, 1.6e-9 off).
        close(
            student_t_quantile(0.4999, 4.0),
            -0.000_266_666_670_617_254_7,
            1e-12,
        );
    }

    #[test]
    fn quantile_edges() {
        assert_eq!(student_t_quantile(0.0, 4.0), f64::NEG_INFINITY);
        assert_eq!(student_t_quantile(1.0, 4.0), f64::INFINITY);
        assert!(student_t_quantile(-0.1, 4.0).is_nan());
        assert!(student_t_quantile(1.1, 4.0).is_nan());
        assert!(student_t_quantile(f64::NAN, 4.0).is_nan());
        assert!(student_t_quantile(0.9, 0.0).is_nan());
        assert!(student_t_quantile(0.9, f64::INFINITY).is_nan());
    }

    #[test]
    fn quantile_inverts_cdf() {
        for df in [1.0, 2.0, 3.5, 9.0, 30.0, 1000.0] {
            for p in [1e-10, 0.001, 0.05, 0.3, 0.49, 0.51, 0.8, 0.99, 0.999_999] {
                let t = student_t_quantile(p, df);
                close(student_t_cdf(t, df), p, 1e-12);
            }
        }
    }

    #[test]
    fn cdf_matches_scipy() {
        // scipy.stats.t.cdf(0.0, 5) = 0.5
        close(student_t_cdf(0.0, 5.0), 0.5, TOL);
        // scipy.stats.t.cdf(1.0, 1) = 0.75
        close(student_t_cdf(1.0, 1.0), 0.75, TOL);
        // scipy.stats.t.cdf(-2.5, 3) = 0.04385332350403278
        close(student_t_cdf(-2.5, 3.0), 0.04385332350403278, TOL);
        // scipy.stats.t.cdf(2.2281388519649385, 10) = 0.9749999999990957
        close(
            student_t_cdf(2.2281388519649385, 10.0),
            0.9749999999990957,
            TOL,
        );
        // scipy.stats.t.cdf(0.1, 30) = 0.5394951941048645
        close(student_t_cdf(0.1, 30.0), 0.5394951941048645, TOL);
        // scipy.stats.t.cdf(4.0, 2.5) = 0.9804935120793409
        close(student_t_cdf(4.0, 2.5), 0.9804935120793409, TOL);
        // scipy.stats.t.cdf(-10.0, 4) = 0.0002810018113579955
        close(student_t_cdf(-10.0, 4.0), 0.0002810018113579955, TOL);
        // scipy.stats.t.cdf(1.5, 1000) = 0.9330349805889568
        close(student_t_cdf(1.5, 1000.0), 0.9330349805889568, TOL);
        // scipy.stats.t.cdf(0.001, 7) = 0.5003849913775006
        close(student_t_cdf(0.001, 7.0), 0.5003849913775006, TOL);
        assert_eq!(student_t_cdf(f64::INFINITY, 3.0), 1.0);
        assert_eq!(student_t_cdf(f64::NEG_INFINITY, 3.0), 0.0);
        assert!(student_t_cdf(f64::NAN, 3.0).is_nan());
        assert!(student_t_cdf(1.0, -1.0).is_nan());
    }

    #[test]
    fn summarize_small_sample() {
        let xs = [1510.0, 1495.0, 1523.0, 1488.0, 1531.0];
        let s = summarize(&xs).unwrap();
        assert_eq!(s.n, 5);
        close(s.mean, 1509.4, TOL); // numpy.mean(xs)
                                    // numpy.std(xs, ddof=1) = 18.14662503056698
        close(s.stddev.unwrap(), 18.14662503056698, TOL);
        // scipy.stats.t.interval(0.95, 4, loc=numpy.mean(xs), scale=scipy.stats.sem(xs))
        //   = (1486.8679890106418, 1531.9320109893583)
        close(s.ci95_low.unwrap(), 1486.8679890106418, TOL);
        close(s.ci95_high.unwrap(), 1531.9320109893583, TOL);
    }

    #[test]
    fn summarize_below_two_runs() {
        assert_eq!(summarize(&[]), None);
        let one = summarize(&[1500.0]).unwrap();
        assert_eq!(
            one,
            Summary {
                n: 1,
                mean: 1500.0,
                stddev: None,
                ci95_low: None,
                ci95_high: None
            }
        );
        // Two equal runs: a spread of zero is a measured fact, so is the
        // zero-width interval.
        let two = summarize(&[1500.0, 1500.0]).unwrap();
        assert_eq!(two.stddev, Some(0.0));
        assert_eq!((two.ci95_low, two.ci95_high), (Some(1500.0), Some(1500.0)));
    }

    #[test]
    fn welch_unequal_variances_and_sizes() {
        let w = welch(&[1510.0, 1495.0, 1523.0], &[1602.0, 1580.0, 1611.0, 1598.0]).unwrap();
        // r = scipy.stats.ttest_ind([1510,1495,1523], [1602,1580,1611,1598], equal_var=False)
        close(w.t, -8.514195908741987, TOL); // r.statistic
        close(w.df, 4.243387213799268, TOL); // r.df
        close(w.p_value, 0.0008007621771586514, TOL); // r.pvalue

        let w = welch(
            &[10.1, 9.8, 10.4, 10.0, 9.9, 10.3],
            &[10.6, 11.2, 10.1, 11.5, 10.9],
        )
        .unwrap();
        // r = scipy.stats.ttest_ind([10.1,9.8,10.4,10.0,9.9,10.3],
        //                           [10.6,11.2,10.1,11.5,10.9], equal_var=False)
        close(w.t, -2.9884077177676187, TOL); // r.statistic
        close(w.df, 5.217039365703406, TOL); // r.df
        close(w.p_value, 0.02893314495051732, TOL); // r.pvalue

        let w = welch(&[1500.0, 1500.5], &[1500.25, 1499.75, 1500.1]).unwrap();
        // r = scipy.stats.ttest_ind([1500.0,1500.5], [1500.25,1499.75,1500.1], equal_var=False)
        close(w.t, 0.7456011350786566, TOL); // r.statistic
        close(w.df, 1.7195114009544346, TOL); // r.df
        close(w.p_value, 0.5443730367741576, TOL); // r.pvalue
    }

    #[test]
    fn welch_is_antisymmetric() {
        let a = [1510.0, 1495.0, 1523.0];
        let b = [1602.0, 1580.0, 1611.0, 1598.0];
        let (ab, ba) = (welch(&a, &b).unwrap(), welch(&b, &a).unwrap());
        assert_eq!(ab.t, -ba.t);
        assert_eq!(ab.df, ba.df);
        assert_eq!(ab.p_value, ba.p_value);
    }

    #[test]
    fn welch_identical_samples() {
        let xs = [100.0, 101.0, 102.0];
        let w = welch(&xs, &xs).unwrap();
        // r = scipy.stats.ttest_ind([100,101,102], [100,101,102], equal_var=False)
        assert_eq!(w.t, 0.0); // r.statistic = 0.0
        close(w.df, 4.0, TOL); // r.df = 4.0
        close(w.p_value, 1.0, TOL); // r.pvalue = 1.0
    }

    #[test]
    fn welch_zero_variance() {
        // One side constant: the formulas hold, df is n − 1 of the other side.
        let w = welch(&[5.0, 5.0, 5.0], &[4.0, 6.0, 5.0, 7.0]).unwrap();
        // r = scipy.stats.ttest_ind([5,5,5], [4,6,5,7], equal_var=False)
        close(w.t, -0.7745966692414834, TOL); // r.statistic
        close(w.df, 3.0, TOL); // r.df
        close(w.p_value, 0.4950253460597111, TOL); // r.pvalue

        // Both constant, different means: scipy gives statistic = -inf and
        // pvalue = 0.0 for ttest_ind([5,5,5], [6,6], equal_var=False).
        let w = welch(&[5.0, 5.0, 5.0], &[6.0, 6.0]).unwrap();
        assert_eq!(w.t, f64::NEG_INFINITY);
        assert_eq!(w.p_value, 0.0);
        assert!(w.df.is_nan());
        assert_eq!(
            welch(&[6.0, 6.0], &[5.0, 5.0, 5.0]).unwrap().t,
            f64::INFINITY
        );

        // Both constant, equal means: scipy gives nan there; this module
        // documents t = 0, p = 1 (nothing tells the sides apart).
        let w = welch(&[5.0, 5.0, 5.0], &[5.0, 5.0]).unwrap();
        assert_eq!(w.t, 0.0);
        assert_eq!(w.p_value, 1.0);
        assert!(w.df.is_nan());
    }

    #[test]
    fn welch_interval_half_width() {
        // Equal sizes and spreads, by hand: s² = 1 on each side, n = 3, so
        // se² = 1/3 + 1/3 = 2/3 and df = (2/3)² / (2 · (1/3)² / 2) = 4;
        // half = t_{0.975}(4) · √(2/3) = 2.7764451051977934 · 0.816496580927726
        // (the quantile is scipy.stats.t.ppf(0.975, 4), as above).
        let d = difference(&[19.0, 20.0, 21.0], &[9.0, 10.0, 11.0]).unwrap();
        close(d.diff, 10.0, TOL);
        close(d.df, 4.0, TOL);
        close(d.half_width(0.95), 2.266_957_935_527_519_7, TOL);

        // Unequal sizes and spreads (the Welch case of welch_unequal_variances
        // above, df = 4.243387213799268): the t quantile at that df as the root
        // of mpmath's (50 digits) 1 − ½·betainc(df/2, ½, 0, df/(df + t²),
        // regularized=True) = 0.975 is 2.7147545382674159, and that times
        // √(s_a²/3 + s_b²/4) is 28.191687114617545.
        let d = difference(&[1602.0, 1580.0, 1611.0, 1598.0], &[1510.0, 1495.0, 1523.0]).unwrap();
        close(d.df, 4.243_387_213_799_268, TOL);
        close(d.half_width(0.95), 28.191_687_114_617_545, TOL);
        // The 99 % interval: mpmath as above, at 0.995, gives
        // t = 4.4286660909115348, times the same se: 45.990002783005169.
        close(d.half_width(0.99), 45.990_002_783_005_17, TOL);

        // One side constant: df = n − 1 of the other (3), by hand
        // half = t_{0.975}(3) · √(0 + (5/3)/4) = 3.182446305284263 · 0.6454972243679028
        // = 2.05426025676088 (scipy.stats.t.ppf(0.975, 3) = 3.182446305284263;
        // mpmath's quantile as above gives 2.054260256760522).
        let d = difference(&[4.0, 6.0, 5.0, 7.0], &[5.0, 5.0, 5.0]).unwrap();
        close(d.half_width(0.95), 2.054_260_256_760_522, TOL);

        // Both constant: no spread, a zero-width interval, as welch() gives
        // p = 0 (different means) or p = 1 (equal ones).
        assert_eq!(
            difference(&[6.0, 6.0], &[5.0, 5.0, 5.0])
                .unwrap()
                .half_width(0.95),
            0.0
        );
        assert_eq!(
            difference(&[5.0, 5.0], &[5.0, 5.0, 5.0])
                .unwrap()
                .half_width(0.95),
            0.0
        );
    }

    #[test]
    fn welch_interval_leaves_out_zero_exactly_when_significant() {
        for (a, b) in [
            (&[748.0, 702.0, 794.0][..], &[355.0, 371.0, 340.0][..]),
            (&[100.0, 110.0, 90.0][..], &[101.0, 95.0, 108.0][..]),
            (
                &[1, 2, 3, 4].map(f64::from)[..],
                &[2, 4, 6, 8, 10].map(f64::from)[..],
            ),
            (
                &[10.1, 9.8, 10.4, 10.0, 9.9, 10.3][..],
                &[10.6, 11.2, 10.1, 11.5, 10.9][..],
            ),
        ] {
            let d = difference(b, a).unwrap();
            let h = d.half_width(0.95);
            let leaves_out_zero = d.diff - h > 0.0 || d.diff + h < 0.0;
            let w = welch(b, a).unwrap();
            assert_eq!(
                leaves_out_zero,
                w.significant(ALPHA, Sides::Two),
                "{a:?} {b:?}"
            );
        }
    }

    #[test]
    fn welch_needs_two_runs_a_side() {
        assert_eq!(welch(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(welch(&[1.0, 2.0], &[1.0]), None);
        assert_eq!(welch(&[], &[]), None);
    }

    #[test]
    fn improvement() {
        close(improvement_pct(1000.0, 1100.0).unwrap(), 10.0, TOL);
        close(improvement_pct(1000.0, 900.0).unwrap(), -10.0, TOL);
        assert_eq!(improvement_pct(1000.0, 1000.0), Some(0.0));
        assert_eq!(improvement_pct(0.0, 1000.0), None);
        assert_eq!(improvement_pct(-0.0, 1000.0), None);
        assert_eq!(improvement_pct(f64::NAN, 1000.0), None);
        assert_eq!(improvement_pct(f64::INFINITY, 1000.0), None);
        assert_eq!(improvement_pct(1000.0, f64::NAN), None);
    }

    #[test]
    fn bar_scaling_and_eighths() {
        assert_eq!(bar(10.0, 10.0, 4), "████");
        assert_eq!(bar(5.0, 10.0, 4), "██");
        assert_eq!(bar(1.0, 1.0, 1), "█");
        // Each eighth of one cell: 1/8 … 7/8 of max over a one-cell bar.
        let eighths = ["▏", "▎", "▍", "▌", "▋", "▊", "▉"];
        for (k, want) in eighths.iter().enumerate() {
            assert_eq!(bar((k + 1) as f64, 8.0, 1), *want);
        }
        // 2 full cells and 3/8 of a third: 19 eighths out of 80.
        assert_eq!(bar(19.0, 80.0, 10), "██▍");
        // Rounds to the nearest eighth.
        assert_eq!(bar(2.4, 8.0, 1), "▎");
        assert_eq!(bar(2.6, 8.0, 1), "▍");
        // The same value, scaled by max.
        assert_eq!(bar(1500.0, 3000.0, 20).chars().count(), 10);
        assert_eq!(bar(1500.0, 1500.0, 20).chars().count(), 20);
    }

    #[test]
    fn bar_bounds() {
        // Never longer than width, however large the value.
        assert_eq!(bar(11.0, 10.0, 4), "████");
        assert_eq!(bar(f64::MAX, 1e-300, 3), "███");
        for w in 0..12 {
            for v in [0.01, 0.5, 0.99, 1.0, 1.7] {
                assert!(bar(v, 1.0, w).chars().count() <= w);
            }
        }
        // Nothing to draw, or no scale to draw it on.
        assert_eq!(bar(0.0, 10.0, 4), "");
        assert_eq!(bar(-3.0, 10.0, 4), "");
        assert_eq!(bar(f64::NAN, 10.0, 4), "");
        assert_eq!(bar(f64::INFINITY, 10.0, 4), "");
        assert_eq!(bar(5.0, 0.0, 4), "");
        assert_eq!(bar(5.0, f64::NAN, 4), "");
        assert_eq!(bar(5.0, f64::INFINITY, 4), "");
        assert_eq!(bar(5.0, 10.0, 0), "");
        // Less than half an eighth of a cell rounds to nothing.
        assert_eq!(bar(0.01, 10.0, 4), "");
    }

    #[test]
    fn one_sided_p_is_half_the_two_sided_on_the_asked_side() {
        let lower = welch(&[90.0, 92.0, 91.0], &[100.0, 101.0, 99.0]).unwrap();
        assert!(lower.t < 0.0);
        let two = lower.p(Sides::Two);
        assert_eq!(lower.p(Sides::Less), two / 2.0);
        assert_eq!(lower.p(Sides::Greater), 1.0 - two / 2.0);
        assert!(lower.significant(ALPHA, Sides::Two));
        assert!(lower.significant(ALPHA, Sides::Less));
        assert!(!lower.significant(ALPHA, Sides::Greater));
        // a stricter alpha is a stricter rule
        assert!(!lower.significant(two / 2.0, Sides::Two));
    }

    #[test]
    fn no_difference_is_never_significant_either_way() {
        let same = welch(&[5.0, 5.0], &[5.0, 5.0]).unwrap();
        for sides in [Sides::Two, Sides::Greater, Sides::Less] {
            assert_eq!(same.p(sides), 1.0);
            assert!(!same.significant(ALPHA, sides));
        }
    }
}
