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
    Ok(micros)
}

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
}
