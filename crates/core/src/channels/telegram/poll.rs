//! The Telegram channel's inbound link: a bot signs in with `getMe` and reads its stored
//! offset; each session is one `getUpdates` long poll from it, each update handed on — a run
//! (committed with the next offset), an owner command, a pairing code, or nothing (the offset
//! alone). See the module doc of `telegram`.

use super::api::{Update, User};
use super::{TELEGRAM, Telegram, route};
use crate::channels::kit::http::ApiError;
use crate::channels::kit::link::Linked;
use crate::channels::kit::{Again, BotDoor, Failure, Link, Taken};
use crate::error::CoreResult;
use crate::store::WriteOp;

/// What a bot's link is called while it is up.
const POLLING: &str = "polling";

/// One bot's poller.
pub(crate) struct Poller {
    door: BotDoor<Telegram>,
    /// The next update to ask for; it moves with each update handled (and committed).
    offset: i64,
}

impl Linked for Telegram {
    type Link = Poller;

    fn link(door: BotDoor<Self>) -> Poller {
        Poller { door, offset: 0 }
    }
}

impl Link for Poller {
    type Me = User;

    /// `getMe`, then the stored offset.
    async fn sign_in(&mut self) -> Result<User, Failure> {
        let me = self
            .door
            .api()
            .get_me()
            .await
            .map_err(|e| self.refused(e))?;
        let stored = self.door.chat.store.cursor(&self.cursor()).await;
        self.offset = stored
            .map_err(|e| Failure::Retry(format!("cannot read the update offset: {e}")))?
            .unwrap_or(0);
        self.door.up(POLLING);
        self.door.own(&me.id.to_string());
        let name = me.username.as_deref().unwrap_or("?");
        tracing::info!(
            account = self.door.account(),
            bot = name,
            "telegram: polling"
        );
        Ok(me)
    }

    /// One `getUpdates`, each update handled in order; one that could not be handled is not
    /// committed and comes again with the next poll.
    async fn session(&mut self, me: &User) -> Result<Again, Failure> {
        let timeout = self.door.settings().poll_timeout_seconds.unwrap_or(30);
        let updates = self.door.api().get_updates(self.offset, timeout).await;
        let updates = updates.map_err(|e| self.refused(e))?;
        self.door.up(POLLING);
        for update in updates {
            let next = update.update_id + 1;
            if let Err(e) = self.handle(me, update).await {
                return Err(Failure::Retry(format!(
                    "an update could not be handled: {e}"
                )));
            }
            self.offset = self.offset.max(next);
        }
        Ok(Again::Now)
    }
}

impl Poller {
    /// The bot's cursor in `channel_cursors`.
    fn cursor(&self) -> String {
        format!("{TELEGRAM}:{}", self.door.account())
    }

    /// One update: a run committed with the next offset, or the next offset alone.
    async fn handle(&self, me: &User, update: Update) -> CoreResult<()> {
        let cursor = WriteOp::SetCursor {
            name: self.cursor(),
            position: update.update_id + 1,
        };
        let source = self.door.bot.source(&update.update_id.to_string());
        let message = match &update.message {
            Some(message) => route::view(me, message),
            None => Err("not a message".into()),
        };
        let taken = self.door.receive(message, source, vec![cursor.clone()]);
        if let Taken::Ignored(_) = taken.await? {
            self.door.parts.commit(vec![cursor]).await?;
        }
        Ok(())
    }

    /// A refused token fails the bot (tried again seldom, `kit/link.rs`); anything else is
    /// tried again soon.
    fn refused(&self, e: ApiError) -> Failure {
        match super::refused(&e) {
            true => Failure::Fatal(self.door.bot.refusal(super::API, "botToken", &e)),
            false => Failure::Retry(format!("telegram: {e}")),
        }
    }
}
