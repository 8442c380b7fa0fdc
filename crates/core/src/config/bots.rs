//! What the sections of the channels of bots (`channels.telegram`, `.discord`, `.slack`) share:
//! the top level configures the bot of account [`DEFAULT_ACCOUNT`], `accounts.<id>` more bots
//! (each account's unset settings are the top level's), and the resolved list the channel runs.
//! The access settings they share are read by `crate::channels::gate`.

use std::collections::BTreeMap;

/// The account id of the bot the top level of a channel's section configures.
pub const DEFAULT_ACCOUNT: &str = "default";

/// The bots that run, by account id: `top` (the top level resolved, when it configures a bot)
/// unless an account is named [`DEFAULT_ACCOUNT`], then every account `on` keeps, each resolved
/// by `over`. Empty while the channel is off.
pub(super) fn resolve<T, A>(
    enabled: bool,
    top: Option<T>,
    accounts: &BTreeMap<String, A>,
    on: impl Fn(&A) -> bool,
    over: impl Fn(&A) -> T,
) -> Vec<(String, T)> {
    if !enabled {
        return Vec::new();
    }
    let mut bots = Vec::new();
    if let Some(top) = top.filter(|_| !accounts.contains_key(DEFAULT_ACCOUNT)) {
        bots.push((DEFAULT_ACCOUNT.to_owned(), top));
    }
    let kept = accounts.iter().filter(|(_, a)| on(a));
    bots.extend(kept.map(|(id, a)| (id.clone(), over(a))));
    bots
}

/// The bot of `account` among `bots` (`None`: no such running bot).
pub(super) fn find<T>(bots: Vec<(String, T)>, account: &str) -> Option<T> {
    bots.into_iter()
        .find_map(|(id, bot)| (id == account).then_some(bot))
}
