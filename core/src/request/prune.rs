//! `storlab.prune()`'s request: the age of the results to delete. Who may
//! prune and where it may be called from are the server's to tell
//! (`ops::prune`); the age is checked here.

use crate::error::{invalid, Result};

/// The age of the results to delete, in microseconds (months counted as
/// 30 days, as PostgreSQL's interval arithmetic does): positive, or 22023.
/// `shown` is the interval as the caller wrote it, for the message.
pub fn check_age(micros: Option<i64>, shown: &str) -> Result<i64> {
    let Some(micros) = micros else {
        return Err(invalid(
            "older_than must not be NULL: give the age of the results to delete, such as '90 days'",
        ));
    };
    if micros <= 0 {
        return Err(invalid(format!(
            "older_than must be a positive age, such as '90 days', not {shown}"
        )));
    }
    // 'infinity' would make the cutoff -infinity (nothing to delete, and a
    // horizon nobody can reason about); an age beyond any stored result
    // would put it outside timestamptz's range
    if micros > MAX_AGE_MICROS {
        return Err(invalid(format!(
            "older_than must be a finite age of at most 1000 years, not {shown}"
        )));
    }
    Ok(micros)
}

/// The longest age prune() takes: 1000 years of 365.25 days.
pub const MAX_AGE_MICROS: i64 = 1000 * 36_525 * 864_000_000;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::SqlState;

    #[test]
    fn a_positive_age_is_kept() {
        assert_eq!(check_age(Some(1), "00:00:00.000001"), Ok(1));
    }

    #[test]
    fn null_zero_and_negative_ages_are_22023() {
        for (age, shown) in [
            (None, "NULL"),
            (Some(0), "00:00:00"),
            (Some(-1), "-00:00:00.000001"),
        ] {
            let e = check_age(age, shown).unwrap_err();
            assert_eq!(e.state, SqlState::InvalidParameterValue);
            assert!(e.message.starts_with("older_than must "), "{}", e.message);
        }
        assert!(check_age(Some(-5), "-5 days")
            .unwrap_err()
            .message
            .ends_with("not -5 days"));
    }

    #[test]
    fn infinite_and_huge_ages_are_22023() {
        // what an interval beyond 64 bits of microseconds arrives as
        for (age, shown) in [
            (i64::MIN, "-infinity"),
            (i64::MAX, "infinity"),
            (MAX_AGE_MICROS + 1, "1001 years"),
        ] {
            let e = check_age(Some(age), shown).unwrap_err();
            assert_eq!(e.state, SqlState::InvalidParameterValue, "{shown}");
            assert!(
                e.message.ends_with(&format!("not {shown}")),
                "{}",
                e.message
            );
        }
        assert_eq!(
            check_age(Some(MAX_AGE_MICROS), "1000 years"),
            Ok(MAX_AGE_MICROS)
        );
    }
}
