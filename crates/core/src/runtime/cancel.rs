//! A cancellation flag a run's tasks can await (abort and timeouts).

use tokio::sync::watch;

#[derive(Clone)]
pub struct CancelToken {
    flag: watch::Sender<bool>,
}

impl Default for CancelToken {
    fn default() -> Self {
        Self {
            flag: watch::channel(false).0,
        }
    }
}

impl CancelToken {
    pub fn cancel(&self) {
        self.flag.send_replace(true);
    }

    pub fn is_cancelled(&self) -> bool {
        *self.flag.borrow()
    }

    /// Resolves once `cancel` was called (at once if it already was).
    pub async fn cancelled(&self) {
        let mut rx = self.flag.subscribe();
        loop {
            if *rx.borrow_and_update() {
                return;
            }
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}
