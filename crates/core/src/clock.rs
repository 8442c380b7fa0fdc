//! Wall-clock time as the store and the wire use it: milliseconds since the Unix epoch.

/// Now, in milliseconds since the Unix epoch (0 if the clock is before the epoch).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}
