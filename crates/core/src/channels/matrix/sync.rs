//! The Matrix channel's inbound link: a bot signs in (`whoami` checks its token, or it logs in)
//! and reads its stored `next_batch`; each session is one `/sync` long poll from it, each text
//! message handed on — a run (committed with the token), an owner command, a pairing code, or
//! nothing — and invitations accepted per `autoJoin`. See the module doc of `matrix` for why
//! nothing is handled twice or lost.

use std::collections::HashMap;
use std::time::Duration;

use super::api::{ApiError, Event, InvitedRoom, Sync, is_refusal};
use super::route::{self, Me};
use super::{API, MATRIX, Matrix, credential, logs_in};
use crate::channels::kit::link::{CONNECTED, Linked};
use crate::channels::kit::{Again, BotDoor, Failure, Link};
use crate::config::{AutoJoin, ThreadReplies};
use crate::error::{CoreError, CoreResult};
use crate::store::WriteOp;

/// What a room is told of a message the bot could not decrypt.
const CANNOT_DECRYPT: &str = "🔒 I could not decrypt your message: its keys did not reach my \
     device. Please send it again; if this keeps happening, start a new encrypted chat with me.";
/// What an encrypted room is told when the bot does not encrypt.
const NOT_ENCRYPTING: &str = "🔒 I cannot read encrypted messages here: end-to-end encryption \
     is off for this bot (channels.matrix.encryption). Please write to me in a room without \
     encryption.";

/// One bot's sync.
pub(crate) struct Syncer {
    door: BotDoor<Matrix>,
    /// Where the stream is: the last `next_batch` handled (none before the first sync).
    since: Option<String>,
    /// Whether each room the bot is in is direct (two members), as last asked; a membership
    /// change in a room forgets its answer.
    direct: HashMap<String, bool>,
    /// The next sync is the first since the bot signed in (it reads at most
    /// `initialSyncLimit` events of each room).
    first: bool,
}

impl Linked for Matrix {
    type Link = Syncer;

    fn link(door: BotDoor<Self>) -> Syncer {
        Syncer {
            door,
            since: None,
            direct: HashMap::new(),
            first: true,
        }
    }
}

impl Link for Syncer {
    type Me = Me;

    /// Who the bot is (logging in when it has a password), and the stored sync token.
    async fn sign_in(&mut self) -> Result<Me, Failure> {
        let client = &self.door.api().client;
        let user_id = client.whoami().await.map_err(|e| self.refused(e))?;
        if user_id != client.user_id() {
            return Err(Failure::Fatal(format!(
                "the access token is {user_id}'s, not {}'s; fix the account's userId or token",
                client.user_id()
            )));
        }
        self.door.own(&user_id);
        let display_name = client.display_name().await;
        let token = self.door.chat.store.token(&self.token_name()).await;
        self.since =
            token.map_err(|e| Failure::Retry(format!("cannot read the sync token: {e}")))?;
        self.first = true;
        tracing::info!(account = self.door.account(), user = %user_id, "matrix: syncing");
        Ok(Me {
            user_id,
            display_name,
        })
    }

    /// One `/sync` and its batch. A first one answers at once: it only learns where the stream
    /// is.
    async fn session(&mut self, me: &Me) -> Result<Again, Failure> {
        let timeout = self.door.settings().poll_timeout_seconds.unwrap_or(30);
        let wait = match self.since {
            Some(_) => Duration::from_secs(timeout),
            None => Duration::ZERO,
        };
        let limit = match self.first {
            true => self.door.settings().initial_sync_limit,
            false => None,
        };
        let client = &self.door.api().client;
        let sync = client.sync(self.since.as_deref(), wait, limit).await;
        let sync = sync.map_err(|e| self.refused(e))?;
        self.door.up(CONNECTED);
        match self.batch(me, &sync).await {
            Ok(()) => {
                self.since = Some(sync.next_batch);
                self.first = false;
                Ok(Again::Now)
            }
            // Not committed past the batch: it comes again with the next sync.
            Err(e) => Err(Failure::Retry(format!(
                "a sync batch could not be handled: {e}"
            ))),
        }
    }
}

impl Syncer {
    /// The bot's `next_batch` in the store's channel tokens.
    fn token_name(&self) -> String {
        format!("{MATRIX}:{}", self.door.account())
    }

    /// One sync's answer: invitations accepted, then each message in order, the last one's run
    /// committed with `next_batch` and the others' with the position before the batch (a crash
    /// half way sees them again, and their event ids make them no-ops); then `next_batch`
    /// alone. A first sync (no position yet) only accepts invitations.
    async fn batch(&mut self, me: &Me, sync: &Sync) -> CoreResult<()> {
        for (room, invited) in &sync.rooms.invite {
            self.invited(me, room, invited).await;
        }
        for (room, joined) in &sync.rooms.join {
            let events = &joined.timeline.events;
            if events.iter().any(|e| e.kind == "m.room.member") {
                self.direct.remove(room.as_str());
            }
        }
        let since = self.since.clone();
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
            let token = match (at + 1 == last, &since) {
                (false, Some(since)) => since.clone(),
                _ => sync.next_batch.clone(),
            };
            let cursor = WriteOp::SetToken {
                name: self.token_name(),
                token,
            };
            self.message(me, (room, event), cursor).await?;
        }
        let done = WriteOp::SetToken {
            name: self.token_name(),
            token: sync.next_batch.clone(),
        };
        self.door.parts.commit(vec![done]).await
    }

    /// An invitation: accepted when `autoJoin` lets the inviter in; a failed join is logged
    /// (the invitation stays pending on the homeserver).
    async fn invited(&self, me: &Me, room: &str, invited: &InvitedRoom) {
        let inviter = invited
            .invite_state
            .events
            .iter()
            .find(|e| e.kind == "m.room.member" && e.state_key.as_deref() == Some(&me.user_id))
            .map_or("", |e| e.sender.as_str());
        let auto_join = self.door.settings().auto_join.unwrap_or_default();
        let listed = auto_join == AutoJoin::Allowlist && self.listed(room).await;
        if !route::may_join((&self.door.bot.gate, auto_join), (room, listed), inviter) {
            tracing::info!(
                account = self.door.account(),
                room,
                inviter,
                "matrix: invitation left (autoJoin)"
            );
            return;
        }
        match self.door.api().client.join(room).await {
            Ok(()) => tracing::info!(
                account = self.door.account(),
                room,
                inviter,
                "matrix: joined"
            ),
            Err(e) => {
                tracing::warn!(account = self.door.account(), room, error = %e, "matrix: cannot join")
            }
        }
    }

    /// Whether `autoJoinAllowlist` names `room`: by its id, `"*"`, or an alias the homeserver
    /// resolves to it (an alias it cannot resolve names nothing).
    async fn listed(&self, room: &str) -> bool {
        let listed = self.door.settings().auto_join_allowlist.clone();
        for entry in listed.unwrap_or_default() {
            let entry = entry.trim();
            let names = match entry.starts_with('#') {
                true => self.door.api().client.resolve_alias(entry).await.as_deref() == Some(room),
                false => entry == "*" || entry == room,
            };
            if names {
                return true;
            }
        }
        false
    }

    /// Where replies go in a direct room (`dm.threadReplies`, else `threadReplies`) or a group.
    fn replies(&self, direct: bool) -> ThreadReplies {
        let settings = self.door.settings();
        let dm = settings.dm_thread_replies.filter(|_| direct);
        dm.or(settings.thread_replies).unwrap_or_default()
    }

    /// One event of a joined room, handed on with `cursor`.
    async fn message(
        &mut self,
        me: &Me,
        (room, event): (&str, &Event),
        cursor: WriteOp,
    ) -> CoreResult<()> {
        if let Some(why) = event.unreadable()
            && event.sender != me.user_id
        {
            return self.unreadable(room, event, why, cursor).await;
        }
        let mut text = match route::text(event, me) {
            Ok(text) => text,
            Err(why) => {
                tracing::debug!(event = %event.event_id, why, "matrix: event ignored");
                return Ok(());
            }
        };
        let direct = self.is_direct(room).await?;
        // A reply to one of the bot's messages addresses it (the reference's
        // implicitMentions.replyToBot); its sender is asked for only where that decides.
        let decides = !direct && !text.mentioned && self.door.bot.gate.require_mention(room);
        if let (true, Some(to)) = (decides, text.replies_to) {
            let client = &self.door.api().client;
            text.mentioned = client.sender_of(room, to).await.as_deref() == Some(&me.user_id);
        }
        if direct {
            self.door.api().direct_room(text.sender, room);
        }
        let source = self.door.bot.source(&event.event_id);
        let view = Ok(route::view(&text, (room, direct), self.replies(direct)));
        self.door.receive(view, source, vec![cursor]).await?;
        Ok(())
    }

    /// An encrypted event the bot cannot read (it cannot decrypt it, or it does not encrypt):
    /// the room is told once, where the bot would answer.
    async fn unreadable(
        &mut self,
        room: &str,
        event: &Event,
        why: &str,
        cursor: WriteOp,
    ) -> CoreResult<()> {
        tracing::info!(account = self.door.account(), room, event = %event.event_id, why, "matrix: an encrypted message the bot cannot read");
        let direct = self.is_direct(room).await?;
        let text = route::Text {
            sender: &event.sender,
            event_id: &event.event_id,
            body: "(an encrypted message)".into(),
            thread: route::thread_of(&event.content),
            mentioned: true,
            notice: false,
            replies_to: None,
        };
        let notice = match self.door.api().client.encrypts() {
            true => CANNOT_DECRYPT,
            false => NOT_ENCRYPTING,
        };
        let source = self.door.bot.source(&event.event_id);
        let view = route::view(&text, (room, direct), self.replies(direct));
        let told = (source, notice.to_string());
        self.door.unreadable(view, told, vec![cursor]).await?;
        Ok(())
    }

    /// Whether `room` has two members (asked once, until its membership changes).
    async fn is_direct(&mut self, room: &str) -> CoreResult<bool> {
        if let Some(known) = self.direct.get(room) {
            return Ok(*known);
        }
        let members = self.door.api().client.joined_members(room).await;
        let members = members
            .map_err(|e| CoreError::Unavailable(format!("matrix: the members of {room}: {e}")))?;
        self.direct.insert(room.to_string(), members == 2);
        Ok(members == 2)
    }

    /// A token the homeserver refuses: the bot is failed until the config changes — unless it
    /// has a password, when the next call logs in again.
    fn refused(&self, e: ApiError) -> Failure {
        if !is_refusal(&e) {
            return Failure::Retry(format!("matrix: {e}"));
        }
        if e.is("M_UNKNOWN_TOKEN") && logs_in(self.door.settings()) {
            // The client forgot the token: the next call logs in again.
            return Failure::Retry(format!(
                "matrix: the token was refused ({e}); logging in again"
            ));
        }
        Failure::Fatal(
            self.door
                .bot
                .refusal(API, credential(self.door.settings()), &e),
        )
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
