//! The Matrix channel's inbound door: one task per bot long-polls `/sync` from the bot's stored
//! `next_batch` and hands each text message on — a run (committed with the token), an owner
//! command, a pairing code, or nothing — and accepts invitations per `autoJoin`. See the module
//! doc of `matrix` for why nothing is handled twice or lost.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::api::{ApiError, Event, InvitedRoom, Sync};
use super::route::{self, Me};
use super::{Account, CONNECTED, MATRIX, Matrix};
use crate::channel::{Door, LinkState};
use crate::channels::pairing::Stranger;
use crate::channels::{DoorParts, Taken};
use crate::error::{CoreError, CoreResult};
use crate::store::WriteOp;

/// Waits between failed syncs grow to this.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long one "typing" lasts, and how often it is renewed while a run works.
const TYPING_FOR: Duration = Duration::from_secs(30);
const TYPING_EVERY: Duration = Duration::from_secs(20);

/// The syncs of every configured bot.
pub struct Syncer {
    matrix: Arc<Matrix>,
    parts: DoorParts,
}

/// Whether each room the bot is in is direct (two members), as last asked; a membership
/// change in a room forgets its answer.
type Directness = HashMap<String, bool>;

impl Syncer {
    pub(super) fn new(matrix: Arc<Matrix>, parts: &DoorParts) -> Self {
        Self {
            matrix,
            parts: parts.clone(),
        }
    }
}

impl Door for Syncer {
    /// Starts a sync with every configured bot; each stops when intake stops.
    fn start(self: Arc<Self>) {
        for account in &self.matrix.accounts {
            account.status.set(LinkState::Starting);
            let (this, account) = (self.clone(), account.clone());
            self.parts
                .spawn_until_stopped(async move { this.run(&account).await });
        }
    }
}

impl Syncer {
    /// Who the bot is (logging in when it has a password), then `/sync` from the stored token
    /// until the gateway stops or the homeserver refuses the bot.
    async fn run(&self, account: &Arc<Account>) {
        let Some(me) = self.me(account).await else {
            return;
        };
        tracing::info!(account = %account.id, user = %me.user_id, "matrix: syncing");
        let name = account.token_name();
        let mut backoff = Duration::from_millis(500);
        let mut since = loop {
            match self.matrix.store.token(&name).await {
                Ok(token) => break token,
                Err(e) => {
                    tracing::warn!(error = %e, "matrix: cannot read the sync token");
                    tokio::time::sleep(backoff).await;
                }
            }
        };
        let timeout = Duration::from_secs(account.settings.poll_timeout_seconds);
        let mut direct = Directness::new();
        loop {
            // A first sync answers at once: it only learns where the stream is.
            let wait = if since.is_some() {
                timeout
            } else {
                Duration::ZERO
            };
            let sync = match account.client.sync(since.as_deref(), wait).await {
                Ok(sync) => sync,
                Err(e) if refused(account, &e).await => return,
                Err(e) => {
                    tracing::warn!(account = %account.id, error = %e, "matrix: sync failed; retrying");
                    account.status.set(LinkState::Starting);
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    continue;
                }
            };
            account.status.set(LinkState::Up(CONNECTED));
            backoff = Duration::from_millis(500);
            let handled = self
                .batch(account, &me, (&sync, since.as_deref()), &mut direct)
                .await;
            match handled {
                Ok(()) => since = Some(sync.next_batch),
                Err(e) => {
                    // Not committed past the batch: it comes again with the next sync.
                    tracing::warn!(error = %e, "matrix: a sync batch could not be handled; retrying");
                    tokio::time::sleep(backoff).await;
                }
            }
        }
    }

    /// The bot's user id and display name (`whoami` checks the token, or logs in); `None` when
    /// the homeserver refused the bot.
    async fn me(&self, account: &Arc<Account>) -> Option<Me> {
        let mut backoff = Duration::from_millis(500);
        loop {
            match account.client.whoami().await {
                Ok(user_id) if user_id == account.client.user_id() => {
                    let display_name = account.client.display_name().await;
                    return Some(Me {
                        user_id,
                        display_name,
                    });
                }
                Ok(other) => {
                    let why = format!(
                        "the access token is {other}'s, not {}'s; fix the account's userId or token",
                        account.client.user_id()
                    );
                    tracing::error!(account = %account.id, "matrix: {why}");
                    account.status.set(LinkState::Failed(why));
                    return None;
                }
                Err(e) if refused(account, &e).await => return None,
                Err(e) => {
                    tracing::warn!(account = %account.id, error = %e, "matrix: whoami failed; retrying");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                }
            }
        }
    }

    /// One sync's answer: invitations accepted, then each message in order, the last one's run
    /// committed with `next_batch` and the others' with `since` (a crash half way sees them
    /// again, and their event ids make them no-ops); then `next_batch` alone. A first sync
    /// (`since` none) only accepts invitations.
    async fn batch(
        &self,
        account: &Arc<Account>,
        me: &Me,
        (sync, since): (&Sync, Option<&str>),
        direct: &mut Directness,
    ) -> CoreResult<()> {
        for (room, invited) in &sync.rooms.invite {
            self.invited(account, me, room, invited).await;
        }
        for (room, joined) in &sync.rooms.join {
            if joined
                .timeline
                .events
                .iter()
                .any(|e| e.kind == "m.room.member")
            {
                direct.remove(room.as_str());
            }
        }
        let name = account.token_name();
        let events: Vec<(&String, &Event)> = match since {
            Some(_) => sync
                .rooms
                .join
                .iter()
                .flat_map(|(room, joined)| {
                    since_join(&joined.timeline.events, me).map(move |e| (room, e))
                })
                .collect(),
            None => Vec::new(),
        };
        let last = events.len();
        for (at, (room, event)) in events.into_iter().enumerate() {
            let token = match (at + 1 == last, since) {
                (false, Some(since)) => since,
                _ => sync.next_batch.as_str(),
            };
            let cursor = WriteOp::SetToken {
                name: name.clone(),
                token: token.to_string(),
            };
            self.message(account, me, (room, event), cursor, direct)
                .await?;
        }
        let done = WriteOp::SetToken {
            name,
            token: sync.next_batch.clone(),
        };
        self.matrix.store.write_batch(vec![done]).await?;
        Ok(())
    }

    /// An invitation: accepted when `autoJoin` lets the inviter in; a failed join is logged
    /// (the invitation stays pending on the homeserver).
    async fn invited(&self, account: &Arc<Account>, me: &Me, room: &str, invited: &InvitedRoom) {
        let inviter = invited
            .invite_state
            .events
            .iter()
            .find(|e| e.kind == "m.room.member" && e.state_key.as_deref() == Some(&me.user_id))
            .map_or("", |e| e.sender.as_str());
        if !route::may_join(&account.settings, room, inviter) {
            tracing::info!(account = %account.id, room, inviter, "matrix: invitation left (autoJoin)");
            return;
        }
        match account.client.join(room).await {
            Ok(()) => tracing::info!(account = %account.id, room, inviter, "matrix: joined"),
            Err(e) => {
                tracing::warn!(account = %account.id, room, error = %e, "matrix: cannot join")
            }
        }
    }

    /// One event of a joined room: a run committed with `cursor`, an owner command, a pairing
    /// code, or nothing.
    async fn message(
        &self,
        account: &Arc<Account>,
        me: &Me,
        (room, event): (&str, &Event),
        cursor: WriteOp,
        direct: &mut Directness,
    ) -> CoreResult<()> {
        let text = match route::text(event, me) {
            Ok(text) => text,
            Err(why) => {
                tracing::debug!(event = %event.event_id, why, "matrix: event ignored");
                return Ok(());
            }
        };
        let is_direct = match direct.get(room) {
            Some(known) => *known,
            None => {
                let members = account.client.joined_members(room).await.map_err(|e| {
                    CoreError::Unavailable(format!("matrix: the members of {room}: {e}"))
                })?;
                direct.insert(room.to_string(), members == 2);
                members == 2
            }
        };
        if is_direct {
            account.direct_room(text.sender, room);
        }
        let source = match account.id.as_str() {
            crate::config::MATRIX_DEFAULT_ACCOUNT => format!("{MATRIX}:{}", event.event_id),
            id => format!("{MATRIX}:{id}:{}", event.event_id),
        };
        let (settings, id) = (&account.settings, account.id.as_str());
        let config = &self.matrix.config;
        let mut decision = route::decide(config, (id, settings), (room, is_direct), &text)?;
        if let Some(sender) = route::stranger(settings, &text, is_direct) {
            let stranger = Stranger {
                channel: MATRIX,
                id_name: "Matrix user id",
                account_id: id.into(),
                id: sender,
                username: None,
                source: source.clone(),
            };
            decision = self.parts.admit(decision, stranger).await?;
        }
        match self
            .parts
            .take(MATRIX, decision, (source, vec![cursor]))
            .await?
        {
            Taken::Run(run, route) => self.show_typing(account, route.to, run),
            Taken::Answered => {}
            Taken::Ignored(why) => {
                tracing::debug!(event = %event.event_id, why, "matrix: message ignored");
            }
        }
        Ok(())
    }

    /// The bot typing in the room until the run ends (bounded by the gateway's stop).
    fn show_typing(&self, account: &Arc<Account>, room: String, run: crate::RunId) {
        let account = account.clone();
        self.parts.typing_until_done(run, TYPING_EVERY, move || {
            let (account, room) = (account.clone(), room.clone());
            async move {
                let _ = account.client.typing(&room, TYPING_FOR).await;
            }
        });
    }
}

/// The events of a room's timeline the bot reads: in a room it has just joined (its own join
/// is in the timeline), those after the join — what came before is the room's past.
fn since_join<'a>(events: &'a [Event], me: &Me) -> impl Iterator<Item = &'a Event> {
    let joined_at = events.iter().rposition(|e| {
        e.kind == "m.room.member"
            && e.state_key.as_deref() == Some(me.user_id.as_str())
            && e.content["membership"] == "join"
            && e.unsigned["prev_content"]["membership"] != "join"
    });
    events[joined_at.map_or(0, |at| at + 1)..].iter()
}

/// A token the homeserver refuses: the bot is failed until the config changes — unless it has
/// a password, when the next call logs in again.
async fn refused(account: &Account, e: &ApiError) -> bool {
    if !e.is_refusal() {
        return false;
    }
    let expired = e.errcode.as_deref() == Some("M_UNKNOWN_TOKEN");
    if expired && account.logs_in() {
        tracing::warn!(account = %account.id, error = %e, "matrix: the token was refused; logging in again");
        account.client.forget_token().await;
        return false;
    }
    let setting = match account.id.as_str() {
        crate::config::MATRIX_DEFAULT_ACCOUNT => "channels.matrix".to_string(),
        id => format!("channels.matrix.accounts.{id}"),
    };
    let why = format!("the homeserver refused {setting}'s credentials ({e}); fix them and restart");
    tracing::error!("matrix: {why}");
    account.status.set(LinkState::Failed(why));
    true
}
