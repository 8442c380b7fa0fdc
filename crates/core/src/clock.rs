//! Wall-clock time as the store and the wire use it: milliseconds since the Unix epoch, read from
//! the one injected [`Clock`] — the [`SystemClock`] in the gateway, a [`ManualClock`] in tests
//! and demos, whose time moves only when told, so a test steps over hours of schedule without
//! waiting and without asserting timings. Nothing else in the engine reads the system time.

/// Now on the system clock, in milliseconds since the Unix epoch (0 if the clock is before the
/// epoch).
fn system_now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

/// A future that resolves when a sleep ends.
pub type Sleep = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Wall-clock time in milliseconds since the Unix epoch, and sleeping until such a time: the
/// clock of every time the engine writes or schedules on, a [`ManualClock`] in tests.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
    /// Resolves once `now_ms() >= at_ms`. `i64::MAX` = never.
    fn sleep_until(&self, at_ms: i64) -> Sleep;
}

/// The system clock. Sleeps in steps of at most a minute and checks the wall clock after
/// each, so a clock that jumps (NTP, a suspended machine) delays a slot by a minute at most.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

/// The longest single sleep of [`SystemClock`].
const MAX_SLEEP: Duration = Duration::from_secs(60);

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        system_now_ms()
    }

    fn sleep_until(&self, at_ms: i64) -> Sleep {
        Box::pin(async move {
            loop {
                let left = at_ms.saturating_sub(system_now_ms());
                if left <= 0 {
                    return;
                }
                let step = Duration::from_millis(left as u64).min(MAX_SLEEP);
                tokio::time::sleep(step).await;
            }
        })
    }
}

/// A clock that stands still until [`ManualClock::set`] or [`ManualClock::advance`] moves it;
/// sleepers wake as soon as it reaches their time.
#[derive(Debug)]
pub struct ManualClock {
    now: watch::Sender<i64>,
}

impl ManualClock {
    pub fn new(start_ms: i64) -> Arc<Self> {
        Arc::new(Self {
            now: watch::channel(start_ms).0,
        })
    }

    /// Moves the clock to `ms` (it may go back, as a real clock can).
    pub fn set(&self, ms: i64) {
        self.now.send_replace(ms);
    }

    /// Moves the clock forward by `ms`.
    pub fn advance(&self, ms: i64) {
        self.now.send_modify(|now| *now = now.saturating_add(ms));
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        *self.now.borrow()
    }

    fn sleep_until(&self, at_ms: i64) -> Sleep {
        let mut now = self.now.subscribe();
        Box::pin(async move {
            // An error means the clock is gone: nothing can ever wake this sleep.
            if now.wait_for(|now| *now >= at_ms).await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_manual_sleep_ends_when_the_clock_reaches_it() {
        let clock = ManualClock::new(1_000);
        let sleep = clock.sleep_until(5_000);
        let woke = tokio::spawn(sleep);
        clock.advance(1_000);
        clock.set(5_000);
        tokio::time::timeout(Duration::from_secs(30), woke)
            .await
            .unwrap()
            .unwrap();
        // A time already reached does not sleep at all.
        tokio::time::timeout(Duration::from_secs(30), clock.sleep_until(4_000))
            .await
            .unwrap();
    }
}
