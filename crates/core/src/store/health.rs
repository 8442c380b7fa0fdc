//! How the store answers now, as `health`, `GET /health` and the doors see it: a database that
//! stalls or goes away is reported, not just waited for.

use std::time::Duration;

/// Quiet this long (two missed heartbeats), a store is degraded.
const DEGRADED_AFTER: Duration = Duration::from_secs(5);
/// Quiet this long (a whole lease), it is unreachable: new calls that need it are refused.
const UNREACHABLE_AFTER: Duration = Duration::from_secs(10);

/// The store's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreState {
    /// It answers.
    Ok,
    /// It has not answered for a while: calls may be slow.
    Degraded,
    /// It has not answered for longer than a lease: new calls that need it are refused at once
    /// (`UNAVAILABLE`), calls in flight wait for it.
    Unreachable,
}

impl StoreState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Degraded => "degraded",
            Self::Unreachable => "unreachable",
        }
    }
}

/// The store's state and, when it is not ok, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreHealth {
    /// `sqlite` or `postgres`.
    pub kind: &'static str,
    pub state: StoreState,
    /// Where the store is, how long it has been quiet and its last error (never a password).
    pub detail: Option<String>,
}

impl StoreHealth {
    /// A store that answers.
    pub fn ok(kind: &'static str) -> Self {
        Self {
            kind,
            state: StoreState::Ok,
            detail: None,
        }
    }

    /// The health of a `kind` store at `place` whose last answer came `quiet` ago, with its
    /// last error.
    pub fn from_quiet(
        kind: &'static str,
        place: &str,
        quiet: Duration,
        last_error: Option<&str>,
    ) -> Self {
        let state = match quiet {
            q if q >= UNREACHABLE_AFTER => StoreState::Unreachable,
            q if q >= DEGRADED_AFTER => StoreState::Degraded,
            _ => StoreState::Ok,
        };
        let detail = (state != StoreState::Ok).then(|| {
            let error = last_error
                .map(|e| format!("; last error: {e}"))
                .unwrap_or_default();
            format!("{place} has not answered for {} s{error}", quiet.as_secs())
        });
        Self {
            kind,
            state,
            detail,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quiet_time_decides_the_state_and_the_detail_names_the_place_and_the_error() {
        let at = "PostgreSQL at db:5432/app";
        let ok = StoreHealth::from_quiet("postgres", at, Duration::from_secs(1), Some("x"));
        assert_eq!((ok.state, ok.detail), (StoreState::Ok, None));
        let slow = StoreHealth::from_quiet("postgres", at, Duration::from_secs(6), None);
        assert_eq!(slow.state, StoreState::Degraded);
        assert_eq!(
            slow.detail.as_deref(),
            Some("PostgreSQL at db:5432/app has not answered for 6 s")
        );
        let gone = StoreHealth::from_quiet(
            "postgres",
            at,
            Duration::from_secs(12),
            Some("connection refused"),
        );
        assert_eq!(gone.state, StoreState::Unreachable);
        assert_eq!(
            gone.detail.as_deref(),
            Some(
                "PostgreSQL at db:5432/app has not answered for 12 s; last error: connection refused"
            )
        );
    }
}
