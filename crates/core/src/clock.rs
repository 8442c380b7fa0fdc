//! Wall-clock time as the store and the wire use it: milliseconds since the Unix epoch.

/// Now, in milliseconds since the Unix epoch (0 if the clock is before the epoch).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// The time source of schedules that must be testable without waiting (the sub-agent archive
/// sweeper): the system clock in the gateway, a [`ManualClock`] in tests.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        now_ms()
    }
}

/// A clock that stands still until told to move (tests).
#[derive(Debug)]
pub struct ManualClock(std::sync::atomic::AtomicI64);

impl ManualClock {
    /// Starts at the current wall-clock time.
    pub fn new() -> Self {
        Self(std::sync::atomic::AtomicI64::new(now_ms()))
    }

    pub fn advance(&self, by: std::time::Duration) {
        self.0
            .fetch_add(by.as_millis() as i64, std::sync::atomic::Ordering::SeqCst);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
}
