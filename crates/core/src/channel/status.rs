//! A channel's state as `health` and `status` report it: whether it is configured and on, its
//! accounts, and — for a channel that keeps connections (a poller) — whether they are up.

/// One channel's state.
#[derive(Debug, Clone, PartialEq)]
pub struct ChannelStatus {
    /// The channel's name (`telegram`).
    pub name: &'static str,
    /// How people name it (`Telegram`).
    pub label: &'static str,
    /// The channel is switched on in its config section.
    pub enabled: bool,
    /// For a channel that keeps connections: the state of the whole, shown as one account's.
    pub link: Option<Link>,
    /// Each configured account (none: the channel is not configured).
    pub accounts: Vec<AccountStatus>,
}

impl ChannelStatus {
    /// A channel of bots, one connection each (`bots`: each account and its state): the whole
    /// is shown as `default_account`'s, failed when a bot failed (named when there are
    /// several), else the first bot's state (off with none).
    pub fn of_bots(
        (name, label): (&'static str, &'static str),
        enabled: bool,
        default_account: &str,
        bots: Vec<(String, LinkState)>,
    ) -> Self {
        let failed = bots.iter().find_map(|(id, s)| match s {
            LinkState::Failed(why) => Some((id, why)),
            _ => None,
        });
        let state = match failed {
            Some((id, why)) if bots.len() > 1 => LinkState::Failed(format!("{id}: {why}")),
            Some((_, why)) => LinkState::Failed(why.clone()),
            None => bots.first().map_or(LinkState::Off, |(_, s)| s.clone()),
        };
        let accounts = bots.into_iter().map(|(account_id, state)| AccountStatus {
            account_id,
            enabled: true,
            link: Some(state),
        });
        Self {
            name,
            label,
            enabled,
            link: Some(Link {
                account_id: default_account.into(),
                state,
            }),
            accounts: accounts.collect(),
        }
    }

    /// Some account is configured.
    pub fn configured(&self) -> bool {
        !self.accounts.is_empty()
    }
}

/// The connection state of a channel as a whole, shown as the account named.
#[derive(Debug, Clone, PartialEq)]
pub struct Link {
    pub account_id: String,
    pub state: LinkState,
}

/// One configured account of a channel.
#[derive(Debug, Clone, PartialEq)]
pub struct AccountStatus {
    pub account_id: String,
    pub enabled: bool,
    /// Its connection, for a channel that keeps one per account.
    pub link: Option<LinkState>,
}

/// A connection's state, shared by the door that sets it and `health` that reads it.
#[derive(Debug)]
pub struct LinkCell(std::sync::Mutex<LinkState>);

impl LinkCell {
    pub fn new(state: LinkState) -> Self {
        Self(std::sync::Mutex::new(state))
    }

    pub fn set(&self, state: LinkState) {
        if let Ok(mut s) = self.0.lock() {
            *s = state;
        }
    }

    pub fn get(&self) -> LinkState {
        self.0.lock().map(|s| s.clone()).unwrap_or(LinkState::Off)
    }
}

/// A connection's state.
#[derive(Debug, Clone, PartialEq)]
pub enum LinkState {
    /// Not started.
    Off,
    /// Started, not up yet.
    Starting,
    /// Up; the word says how (`polling`).
    Up(&'static str),
    /// Stopped for good, and why (a refused token).
    Failed(String),
}

impl LinkState {
    /// The state's name on the wire (`off`, `starting`, the word of `Up`, `failed`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::Starting => "starting",
            Self::Up(word) => word,
            Self::Failed(_) => "failed",
        }
    }

    pub fn is_up(&self) -> bool {
        matches!(self, Self::Up(_))
    }

    /// Why it failed, when it did.
    pub fn last_error(&self) -> Option<&str> {
        match self {
            Self::Failed(why) => Some(why),
            _ => None,
        }
    }
}
