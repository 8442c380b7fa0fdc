//! The Telegram channel's inbound door: one task per bot polls `getUpdates` from the bot's
//! stored offset and hands each update on — a run (committed with the next offset), an owner
//! command, a pairing code, or nothing (the offset alone). See the module doc of `telegram`.

use std::sync::Arc;
use std::time::Duration;

use super::api::{self, ApiError};
use super::{Account, POLLING, TELEGRAM, Telegram, route};
use crate::channel::{Door, LinkState};
use crate::channels::gate::Decision;
use crate::channels::pairing::Stranger;
use crate::channels::{DoorParts, Taken};
use crate::error::CoreResult;
use crate::store::WriteOp;

/// Waits between failed polls grow to this.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Telegram shows "typing…" for about 5 s; it is sent again this often while a run works.
const TYPING_EVERY: Duration = Duration::from_secs(4);

/// The pollers of every configured bot.
pub struct Poller {
    pub(super) telegram: Arc<Telegram>,
    pub(super) parts: DoorParts,
}

impl Poller {
    pub(super) fn new(telegram: Arc<Telegram>, parts: &DoorParts) -> Self {
        Self {
            telegram,
            parts: parts.clone(),
        }
    }
}

impl Door for Poller {
    /// Starts polling with every configured bot; each stops when intake stops.
    fn start(self: Arc<Self>) {
        for account in &self.telegram.accounts {
            account.status.set(LinkState::Starting);
            let (this, account) = (self.clone(), account.clone());
            self.parts
                .spawn_until_stopped(async move { this.poll(&account).await });
        }
    }
}

impl Poller {
    /// `getMe`, then `getUpdates` from the bot's stored offset until the gateway stops.
    async fn poll(self: &Arc<Self>, account: &Arc<Account>) {
        let bot = &account.bot;
        let mut backoff = Duration::from_millis(500);
        let me = loop {
            match bot.get_me().await {
                Ok(me) => break me,
                Err(e) if refused(account, &e) => return,
                Err(e) => {
                    tracing::warn!(account = %account.id, error = %e, "telegram: getMe failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        };
        account.status.set(LinkState::Up(POLLING));
        let name = me.username.as_deref().unwrap_or("?");
        tracing::info!(account = %account.id, bot = name, "telegram: polling");
        let timeout = account.settings.poll_timeout_seconds;
        // Read once; from then on it moves with each update handled (and committed).
        let mut offset = loop {
            match self.telegram.store.cursor(&account.cursor()).await {
                Ok(offset) => break offset.unwrap_or(0),
                Err(e) => {
                    tracing::warn!(error = %e, "telegram: cannot read the update offset");
                    tokio::time::sleep(backoff).await;
                }
            }
        };
        loop {
            let updates = match bot.get_updates(offset, timeout).await {
                Ok(updates) => updates,
                Err(e) if refused(account, &e) => return,
                Err(e) => {
                    tracing::warn!(account = %account.id, error = %e, "telegram: getUpdates failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            };
            backoff = Duration::from_millis(500);
            for update in updates {
                let next = update.update_id + 1;
                if let Err(e) = self.handle(account, &me, update).await {
                    // Not committed: the same update comes again with the next poll.
                    tracing::warn!(error = %e, "telegram: an update could not be handled; retrying");
                    tokio::time::sleep(backoff).await;
                    break;
                }
                offset = offset.max(next);
            }
        }
    }

    /// One update: a run committed with the next offset, or the next offset alone.
    async fn handle(
        self: &Arc<Self>,
        account: &Arc<Account>,
        me: &api::User,
        update: api::Update,
    ) -> CoreResult<()> {
        let cursor = WriteOp::SetCursor {
            name: account.cursor(),
            position: update.update_id + 1,
        };
        let source = match account.id.as_str() {
            crate::config::TELEGRAM_DEFAULT_ACCOUNT => format!("telegram:{}", update.update_id),
            id => format!("telegram:{id}:{}", update.update_id),
        };
        let (settings, id) = (&account.settings, account.id.as_str());
        let mut decision = match &update.message {
            Some(message) => route::decide(&self.telegram.config, (id, settings), me, message)?,
            None => Decision::ignore("not a message"),
        };
        if let Some((sender, username)) = update
            .message
            .as_ref()
            .and_then(|m| route::stranger(settings, m))
        {
            let stranger = Stranger {
                channel: TELEGRAM,
                id_name: "Telegram user id",
                account_id: id.into(),
                id: sender,
                username,
                source: source.clone(),
            };
            decision = self.parts.admit(decision, stranger).await?;
        }
        match self
            .parts
            .take(TELEGRAM, decision, (source, vec![cursor.clone()]))
            .await?
        {
            Taken::Run(run, route) => self.show_typing(account, (route.to, route.thread_id), run),
            Taken::Answered => {}
            Taken::Ignored(why) => {
                tracing::debug!(update = update.update_id, why, "telegram: update ignored");
                self.telegram.store.write_batch(vec![cursor]).await?;
            }
        }
        Ok(())
    }

    /// "typing…" in the chat until the run ends (bounded by the gateway's stop).
    fn show_typing(
        self: &Arc<Self>,
        account: &Arc<Account>,
        (chat, thread): (String, Option<String>),
        run: crate::RunId,
    ) {
        let bot = account.bot.clone();
        self.parts.typing_until_done(run, TYPING_EVERY, move || {
            let (bot, chat, thread) = (bot.clone(), chat.clone(), thread.clone());
            async move {
                let _ = bot.typing(&chat, thread.as_deref()).await;
            }
        });
    }
}

/// A 401 (or 404, a token of no bot): the bot is failed until the config changes.
fn refused(account: &Account, e: &ApiError) -> bool {
    if !matches!(e.code, 401 | 404) {
        return false;
    }
    let setting = match account.id.as_str() {
        crate::config::TELEGRAM_DEFAULT_ACCOUNT => "channels.telegram.botToken".to_string(),
        id => format!("channels.telegram.accounts.{id}.botToken"),
    };
    let why = format!("the Bot API refused {setting} ({e}); fix the token and restart");
    tracing::error!("telegram: {why}");
    account.status.set(LinkState::Failed(why));
    true
}
