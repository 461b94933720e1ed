//! The wall clock in whole seconds, as the stores' expiry times and records keep it.

use std::time::{SystemTime, UNIX_EPOCH};

/// Now, in Unix seconds (session turns, decisions, cache expiry).
pub fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}
