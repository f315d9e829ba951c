//! The checks of relocation arguments that need no catalog.

use std::time::Duration;

use crate::error::{invalid, Result};

/// How long a move waits for each lock: positive, at most an hour.
pub fn lock_timeout(us: i64) -> Result<Duration> {
    if us <= 0 || us > 3_600_000_000 {
        return Err(invalid(format!(
            "lock_timeout must be positive and at most 1 hour, not {} s",
            us as f64 / 1e6
        )));
    }
    Ok(Duration::from_micros(us as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_timeouts_are_bounded() {
        assert_eq!(lock_timeout(5_000_000).unwrap(), Duration::from_secs(5));
        assert!(lock_timeout(0).unwrap_err().message.contains("positive"));
        assert!(lock_timeout(3_600_000_001)
            .unwrap_err()
            .message
            .contains("1 hour"));
    }
}
