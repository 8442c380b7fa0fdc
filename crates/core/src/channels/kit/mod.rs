//! The channel kit: everything a chat channel is besides its platform's code. A platform
//! (Telegram, Discord, Slack, Matrix, WhatsApp, Signal) writes five things — its wire types, its
//! API calls, how its messages map to the kit's view ([`ChatMessage`]), its limits (its settings'
//! [`crate::config::Platform`]) and, for an inbound link that runs by itself, one session of it
//! ([`Link`]) — and implements [`ChatPlatform`]; [`Chat`] is then its channel:
//!
//! - its bots ([`Bots`]): one per account, the default account, `send`'s account check, and
//!   their states for `health` as one;
//! - its outbound sender ([`Chat`]'s `send`): the reply in parts of at most `textChunkLimit`
//!   characters, at most `maxReplyParts` of them, each part taken recorded so a retry sends only
//!   the rest (`parts.rs`);
//! - its inbound driver ([`link::run`]): sign in, read session after session, back off after
//!   a failure, show the link's state, stop for good on a refused credential, stop with the
//!   engine;
//! - its routing ([`route`]): DM or group, `dmPolicy`, `groupPolicy`, `requireMention`,
//!   `allowBots`, owners and owner commands, the session key and the reply's route, decided
//!   once for every channel over the platform's view of a message, the message cut at
//!   `maxInboundChars`;
//! - its guard against loops (`guard.rs`): its own bots ignore each other, and a per-chat
//!   breaker stops answering bots after a run of their messages without a person;
//! - what a message then does ([`DoorParts::receive`]): a stranger's pairing code, a run
//!   committed with the platform's cursor, an owner command answered, "typing…" while the run
//!   works.
//!
//! Anything the gateway adds to "every channel" is written here, once.

mod bots;
pub(crate) mod door;
pub(crate) mod gate;
mod guard;
pub(crate) mod http;
pub(crate) mod link;
mod parts;
pub(crate) mod route;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::BoxFuture;

pub(crate) use bots::{Bot, Bots};
pub(crate) use door::{BotDoor, DoorParts, Taken};
pub(crate) use link::{Again, Failure, Link};
pub(crate) use route::{ChatMessage, Group, Thread};

use super::{ChannelDoors, ChatChannel};
use crate::channel::{Channel, ChannelError, ChannelStatus, Sent};
use crate::config::{Config, Platform};
use crate::store::{DeliveryRecord, Store};

/// What a chat platform writes; [`Chat`] is the rest of its channel. A platform is a marker
/// type: what it keeps lives in its bots ([`Bot::api`]) and its links.
pub(crate) trait ChatPlatform: Sized + Send + Sync + 'static {
    /// Its settings in the config (`channels.<name>`'s platform part, and its limits).
    type Settings: Platform;
    /// One bot's client of the platform's API (and whatever else the bot keeps).
    type Api: Send + Sync + 'static;
    /// How people name the platform (`Telegram`).
    const LABEL: &'static str;
    /// What the platform calls a sender's id, for a pairing code's message (`Telegram user id`).
    const ID_NAME: &'static str;
    /// How long the platform shows "typing…" after one call, less a margin: how often the call
    /// is made again while a run works (`None`: the platform shows no typing).
    const TYPING_EVERY: Option<Duration> = None;

    /// The channel's name in keys, routes, records and pairing.
    fn name() -> &'static str {
        Self::Settings::NAME
    }

    /// What a private chat's session key calls `bot` under `dmScope:
    /// "per-account-channel-peer"`: its account id (Signal: its number, as its keys always did).
    fn key_account(bot: &Bot<Self>) -> &str {
        &bot.id
    }

    /// A bot's client, from its resolved settings (`None`: it lacks what it needs to run).
    fn api(settings: &Self::Settings, reach: &Reach<'_>) -> Option<Self::Api>;

    /// Posts part `index` of `record`'s text by `bot` (the same index on a retry of the part).
    fn post(
        bot: &Bot<Self>,
        record: &DeliveryRecord,
        part: (usize, &str),
    ) -> impl Future<Output = Result<(), ChannelError>> + Send;

    /// What must hold before any part of `record` goes out (WhatsApp's 24-hour window).
    fn before_post(
        _chat: &Chat<Self>,
        _bot: &Bot<Self>,
        _record: &DeliveryRecord,
    ) -> impl Future<Output = Result<(), ChannelError>> + Send {
        async { Ok(()) }
    }

    /// Shows "typing…" by `bot` where a reply to `to` (and `thread`) goes.
    fn typing(
        _bot: &Bot<Self>,
        _to: &str,
        _thread: Option<&str>,
    ) -> impl Future<Output = ()> + Send {
        async {}
    }

    /// The channel's inbound doors, handing messages to `parts`.
    fn doors(chat: Arc<Chat<Self>>, parts: &DoorParts) -> ChannelDoors;
}

/// What a bot's client is made with: the HTTP client its calls go through, and the gateway's
/// state dir (where a client keeps what it must on disk: Matrix's crypto store).
pub(crate) struct Reach<'a> {
    pub http: &'a reqwest::Client,
    pub home: &'a std::path::Path,
}

/// A chat channel: its bots, where it keeps what it must, and its guard against loops.
pub(crate) struct Chat<P: ChatPlatform> {
    pub bots: Bots<P>,
    pub config: Arc<Config>,
    pub store: Arc<dyn Store>,
    pub guard: guard::Guard,
}

impl<P: ChatPlatform> Chat<P> {
    /// The channel with the bots `channels.<name>` configures (none started), their clients
    /// made with `reach`.
    pub fn new(config: Arc<Config>, store: Arc<dyn Store>, reach: &Reach<'_>) -> Arc<Self> {
        let section = P::Settings::section(&config.channels);
        let bots = Bots::new(section, |settings| P::api(settings, reach));
        Arc::new(Self {
            bots,
            config,
            store,
            guard: guard::Guard::default(),
        })
    }

    /// One delivery attempt: the parts of the text not taken yet, in order, each recorded as
    /// taken before the next is posted.
    async fn deliver(&self, record: &DeliveryRecord) -> Result<(), ChannelError> {
        let bot = self
            .bots
            .get(record.account_id.as_deref())
            .map_err(ChannelError::Permanent)?;
        P::before_post(self, bot, record).await?;
        let parts = parts::Parts::new(&self.store, record, bot.caps);
        for (index, part) in parts.rest() {
            P::post(bot, record, (index, part)).await?;
            parts.took(index).await?;
        }
        Ok(())
    }
}

impl<P: ChatPlatform> Channel for Chat<P> {
    fn name(&self) -> &'static str {
        P::name()
    }

    fn send<'a>(&'a self, record: &'a DeliveryRecord) -> Sent<'a> {
        let sent: BoxFuture<'a, _> = Box::pin(async move {
            self.deliver(record).await?;
            Ok(Vec::new())
        });
        sent
    }

    /// The bot `send` names must run (the default one when none is named).
    fn check_account(&self, account_id: Option<&str>) -> Result<(), String> {
        self.bots.get(account_id).map(|_| ())
    }

    /// Each bot and its link's state; the whole as the default bot's.
    fn status(&self) -> Option<ChannelStatus> {
        Some(self.bots.status())
    }

    fn pairs(&self) -> bool {
        true
    }
}

impl<P: ChatPlatform> ChatChannel for Chat<P> {
    fn doors(self: Arc<Self>, parts: &DoorParts) -> ChannelDoors {
        P::doors(self, parts)
    }
}
