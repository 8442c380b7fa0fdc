//! The bot's Matrix client, on `matrix-sdk` (docs/decisions.md, "Matrix on matrix-sdk"): one
//! `matrix_sdk::Client` per bot, made at sign-in, speaking the client-server API through the
//! gateway's own reqwest client (its TLS, no retries of its own: the outbox and the link retry).
//!
//! With `encryption: true` the client keeps its device and its Olm/Megolm keys in the library's
//! SQLite stores under `<state>/matrix/<user>/`, encrypted with a passphrase kept beside them
//! (owner-only, made once): `/sync` goes through the library (it decrypts, receives and shares
//! keys), and a message to an encrypted room is encrypted. With `encryption: false` the client
//! keeps nothing on disk and never uploads keys: `/sync` is a plain request and messages are
//! sent as they are (an encrypted room is told that the bot does not read it).
//!
//! Errors come back as the kit's [`ApiError`] (a 429 `M_LIMIT_EXCEEDED` with its wait); the
//! access token, the password and the passphrase never appear in an error or a log.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use matrix_sdk::config::{RequestConfig, SyncSettings, SyncToken};
use matrix_sdk::deserialized_responses::TimelineEventKind;
use matrix_sdk::ruma::api::client::filter::FilterDefinition;
use matrix_sdk::ruma::api::client::membership::joined_members;
use matrix_sdk::ruma::api::client::message::send_message_event;
use matrix_sdk::ruma::api::client::room::get_room_event;
use matrix_sdk::ruma::api::client::sync::sync_events::v3 as sync_events;
use matrix_sdk::ruma::api::client::typing::create_typing_event::{self, v3::Typing};
use matrix_sdk::ruma::events::MessageLikeEventType;
use matrix_sdk::ruma::serde::Raw;
use matrix_sdk::ruma::{OwnedDeviceId, OwnedRoomId, OwnedTransactionId, OwnedUserId};
use serde_json::{Value, json};
use tokio::sync::Mutex;

use super::api::{ApiError, Event, InviteState, InvitedRoom, JoinedRoom, Sync, Timeline};
use crate::channels::kit::http::{send, wait};

/// The device id a password login asks for: the same on every login, so that the homeserver
/// keeps one device for the bot (with its keys) and a retried send's transaction id still names
/// its first try.
const DEVICE_ID: &str = "SWITCHBOARD";
/// The most events of each room one sync reads.
const TIMELINE_LIMIT: u32 = 100;
/// How long one call may take (a sync's wait comes on top).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How a bot reaches its homeserver.
pub struct Settings {
    pub homeserver: String,
    pub user_id: String,
    pub access_token: Option<String>,
    pub password: Option<String>,
    /// End-to-end encryption: the crypto store under `store_dir`.
    pub encryption: bool,
    /// `<state>/matrix/<user>`: the library's stores and their passphrase.
    pub store_dir: PathBuf,
    /// The device's name for a password login.
    pub device_name: Option<String>,
}

/// The bot's client: made (and logged in, or its session restored) at the first call.
pub struct Client {
    http: reqwest::Client,
    settings: Settings,
    sdk: Mutex<Option<matrix_sdk::Client>>,
}

impl Client {
    pub fn new(http: reqwest::Client, settings: Settings) -> Self {
        Self {
            http,
            settings,
            sdk: Mutex::new(None),
        }
    }

    pub fn user_id(&self) -> &str {
        &self.settings.user_id
    }

    pub fn encrypts(&self) -> bool {
        self.settings.encryption
    }

    /// The library's client, signed in: made once, and again after a refused token when a
    /// password can log in again.
    async fn sdk(&self) -> Result<matrix_sdk::Client, ApiError> {
        let mut held = self.sdk.lock().await;
        if let Some(client) = held.as_ref() {
            return Ok(client.clone());
        }
        let client = self.sign_in().await?;
        *held = Some(client.clone());
        Ok(client)
    }

    /// Forgets the session after a refused token: the next call signs in again.
    pub async fn forget_session(&self) {
        if self.settings.password.is_some() {
            *self.sdk.lock().await = None;
        }
    }

    async fn sign_in(&self) -> Result<matrix_sdk::Client, ApiError> {
        let s = &self.settings;
        let request = RequestConfig::new().disable_retry().timeout(CALL_TIMEOUT);
        let mut builder = matrix_sdk::Client::builder()
            .homeserver_url(&s.homeserver)
            .http_client(self.http.clone())
            .request_config(request);
        if s.encryption {
            let passphrase = passphrase(&s.store_dir).map_err(|e| {
                ApiError::new(
                    0,
                    None,
                    format!("the crypto store at {}: {e}", s.store_dir.display()),
                )
            })?;
            builder = builder.sqlite_store(&s.store_dir, Some(&passphrase));
        }
        let client = builder
            .build()
            .await
            .map_err(|e| ApiError::new(0, None, format!("the Matrix client: {e}")))?;
        let auth = client.matrix_auth();
        match (&s.access_token, &s.password) {
            (Some(token), _) => {
                let (user_id, device_id) = self.whoami_raw(token).await?;
                let session = matrix_sdk::authentication::matrix::MatrixSession {
                    meta: matrix_sdk::SessionMeta { user_id, device_id },
                    tokens: matrix_sdk::SessionTokens {
                        access_token: token.clone(),
                        refresh_token: None,
                    },
                };
                let restored = auth.restore_session(session, Default::default()).await;
                restored.map_err(|e| error("restoring the session", &e))?;
            }
            (None, Some(password)) => {
                let name = s.device_name.as_deref().unwrap_or("switchboard");
                let login = auth
                    .login_username(&s.user_id, password)
                    .device_id(DEVICE_ID)
                    .initial_device_display_name(name);
                login.send().await.map_err(|e| error("/login", &e))?;
            }
            (None, None) => {
                let why = "no access token and no password to log in with";
                return Err(ApiError::new(0, None, why));
            }
        }
        Ok(client)
    }

    /// `GET /account/whoami` with `token`, before the library has a session: the user and the
    /// device the token is for (a session is restored for that device).
    async fn whoami_raw(&self, token: &str) -> Result<(OwnedUserId, OwnedDeviceId), ApiError> {
        let base = self.settings.homeserver.trim_end_matches('/');
        let request = self
            .http
            .get(format!("{base}/_matrix/client/v3/account/whoami"))
            .timeout(CALL_TIMEOUT)
            .bearer_auth(token);
        let answer = send(request, ("the homeserver", "/account/whoami")).await?;
        if !answer.is_success() {
            let body = &answer.body;
            let errcode = body["errcode"].as_str().map(str::to_string);
            let message = body["error"].as_str().unwrap_or("no error message");
            let message = format!("/account/whoami: {message}");
            return Err(ApiError::new(answer.status, errcode, message));
        }
        let user = answer.body["user_id"].as_str().unwrap_or_default();
        let user_id = OwnedUserId::try_from(user)
            .map_err(|e| ApiError::new(200, None, format!("/account/whoami: user_id: {e}")))?;
        let device = answer.body["device_id"].as_str().unwrap_or_default();
        if device.is_empty() && self.settings.encryption {
            let why = "/account/whoami: the access token has no device, which encryption needs: \
                       give the bot a password instead (it logs in as device SWITCHBOARD)";
            return Err(ApiError::new(200, None, why));
        }
        let device = if device.is_empty() { DEVICE_ID } else { device };
        Ok((user_id, device.into()))
    }

    /// Checks the session and answers the user it is for.
    pub async fn whoami(&self) -> Result<String, ApiError> {
        let client = self.sdk().await?;
        match client.whoami().await {
            Ok(answer) => Ok(answer.user_id.to_string()),
            Err(e) => Err(self.refused(http_error("/account/whoami", &e)).await),
        }
    }

    /// A refused token forgets the session (a password logs in again on the next call).
    async fn refused(&self, e: ApiError) -> ApiError {
        if e.is("M_UNKNOWN_TOKEN") {
            self.forget_session().await;
        }
        e
    }

    /// The bot's display name, if it has one.
    pub async fn display_name(&self) -> Option<String> {
        let client = self.sdk().await.ok()?;
        client.account().get_display_name().await.ok().flatten()
    }

    /// One `/sync` after `since` (a first sync, with `None`, reads no timeline), waiting up to
    /// `timeout` for something new, reading at most `limit` events of each room (100 unless
    /// given). Encrypted events are decrypted when the bot encrypts; one
    /// it cannot read is kept with why (`Event::unreadable`).
    pub async fn sync(
        &self,
        since: Option<&str>,
        timeout: Duration,
        limit: Option<u32>,
    ) -> Result<Sync, ApiError> {
        let client = self.sdk().await?;
        let limit = match since {
            Some(_) => limit.unwrap_or(TIMELINE_LIMIT),
            None => 0,
        };
        let filter = sync_events::Filter::FilterDefinition(filter(limit));
        let answer = match self.settings.encryption {
            true => self.sync_decrypted(&client, since, timeout, filter).await,
            false => sync_plain(&client, since, timeout, filter).await,
        };
        match answer {
            Err(e) => Err(self.refused(e).await),
            ok => ok,
        }
    }

    async fn sync_decrypted(
        &self,
        client: &matrix_sdk::Client,
        since: Option<&str>,
        timeout: Duration,
        filter: sync_events::Filter,
    ) -> Result<Sync, ApiError> {
        let token = since.map_or(SyncToken::NoToken, |t| SyncToken::Specific(t.to_string()));
        let settings = SyncSettings::new()
            .token(token)
            .timeout(timeout)
            .filter(filter)
            .set_presence(matrix_sdk::ruma::presence::PresenceState::Offline);
        let answer = client.sync_once(settings).await;
        let answer = answer.map_err(|e| error("/sync", &e))?;
        let joined = answer.rooms.joined.into_iter().map(|(room, joined)| {
            let events = joined.timeline.events.iter().filter_map(|e| {
                let mut event = decode(e.kind.raw())?;
                if let TimelineEventKind::UnableToDecrypt { utd_info, .. } = &e.kind {
                    event.unreadable = Some(format!("{:?}", utd_info.reason));
                }
                Some(event)
            });
            (room, events.collect())
        });
        Ok(sync_of(answer.next_batch, joined, answer.rooms.invited))
    }

    /// The room `alias` (`#room:server`) names, as the homeserver resolves it (`None`: it does
    /// not).
    pub async fn resolve_alias(&self, alias: &str) -> Option<String> {
        let client = self.sdk().await.ok()?;
        let alias = matrix_sdk::ruma::OwnedRoomAliasId::try_from(alias).ok()?;
        let answer = client.resolve_room_alias(&alias).await.ok()?;
        Some(answer.room_id.to_string())
    }

    /// Who sent the event `event` of `room` (`None`: the homeserver does not say).
    pub async fn sender_of(&self, room: &str, event: &str) -> Option<String> {
        let client = self.sdk().await.ok()?;
        let event = matrix_sdk::ruma::OwnedEventId::try_from(event).ok()?;
        let request = get_room_event::v3::Request::new(room_id(room).ok()?, event);
        let answer = client.send(request).await.ok()?;
        let sender = answer.event.get_field::<String>("sender").ok()??;
        Some(sender)
    }

    /// `POST /join/{roomId}`: accepts an invitation.
    pub async fn join(&self, room: &str) -> Result<(), ApiError> {
        let client = self.sdk().await?;
        let room = room_id(room)?;
        let joined = client.join_room_by_id(&room).await;
        joined.map(|_| ()).map_err(|e| error("/join", &e))
    }

    /// How many members have joined `room`.
    pub async fn joined_members(&self, room: &str) -> Result<usize, ApiError> {
        let client = self.sdk().await?;
        let request = joined_members::v3::Request::new(room_id(room)?);
        let answer = client.send(request).await;
        let answer = answer.map_err(|e| http_error("/joined_members", &e))?;
        Ok(answer.joined.len())
    }

    /// `m.room.message` with `content` into `room`, encrypted when the room is and the bot
    /// encrypts; the same `txn` again is answered with the first event and sends nothing.
    pub async fn send(&self, room: &str, txn: &str, content: Value) -> Result<(), ApiError> {
        let client = self.sdk().await?;
        let room_id = room_id(room)?;
        let txn: OwnedTransactionId = txn.into();
        if self.settings.encryption {
            let Some(joined) = client.get_room(&room_id) else {
                let why = "the bot has not synced this room yet (not joined?)";
                return Err(ApiError::new(0, None, format!("/send: {why}")));
            };
            let sent = joined
                .send_raw("m.room.message", content)
                .with_transaction_id(&txn);
            return sent.await.map(|_| ()).map_err(|e| error("/send", &e));
        }
        let content = Raw::new(&content)
            .map_err(|e| ApiError::new(0, None, format!("/send: {e}")))?
            .cast_unchecked();
        let request = send_message_event::v3::Request::new_raw(
            room_id,
            txn,
            MessageLikeEventType::RoomMessage,
            content,
        );
        let sent = client.send(request).await;
        sent.map(|_| ()).map_err(|e| http_error("/send", &e))
    }

    /// Shows the bot as typing in `room` for `lasting`.
    pub async fn typing(&self, room: &str, lasting: Duration) -> Result<(), ApiError> {
        let client = self.sdk().await?;
        let user = OwnedUserId::try_from(self.settings.user_id.as_str())
            .map_err(|e| ApiError::new(0, None, format!("/typing: {e}")))?;
        let typing = Typing::Yes(create_typing_event::v3::TypingInfo::new(lasting));
        let request = create_typing_event::v3::Request::new(user, room_id(room)?, typing);
        let answer = client.send(request).await;
        answer.map(|_| ()).map_err(|e| http_error("/typing", &e))
    }
}

/// A plain `/sync` (no keys, nothing decrypted): the bot does not encrypt.
async fn sync_plain(
    client: &matrix_sdk::Client,
    since: Option<&str>,
    timeout: Duration,
    filter: sync_events::Filter,
) -> Result<Sync, ApiError> {
    let mut request = sync_events::Request::new();
    request.filter = Some(filter);
    request.since = since.map(str::to_string);
    request.timeout = Some(timeout);
    request.set_presence = matrix_sdk::ruma::presence::PresenceState::Offline;
    let config = RequestConfig::new()
        .disable_retry()
        .timeout(CALL_TIMEOUT + timeout);
    let answer = client.send(request).with_request_config(config).await;
    let answer = answer.map_err(|e| http_error("/sync", &e))?;
    let joined = answer.rooms.join.into_iter().map(|(room, joined)| {
        let events = joined.timeline.events.iter().filter_map(decode);
        (room, events.collect())
    });
    Ok(sync_of(answer.next_batch, joined, answer.rooms.invite))
}

/// The sync's filter: no presence, no account data, members loaded lazily, and at most `limit`
/// timeline events of each room (none on a first sync: it only learns where the stream is).
fn filter(limit: u32) -> FilterDefinition {
    let definition = json!({
        "presence": {"not_types": ["*"]},
        "account_data": {"not_types": ["*"]},
        "room": {
            "timeline": {"limit": limit},
            "state": {"lazy_load_members": true},
            "ephemeral": {"not_types": ["*"]},
            "account_data": {"not_types": ["*"]},
        },
    });
    serde_json::from_value(definition).unwrap_or_default()
}

/// An event as the channel reads it (`None`: not an event the channel could read at all).
fn decode<T>(raw: &Raw<T>) -> Option<Event> {
    serde_json::from_str(raw.json().get()).ok()
}

/// A sync's answer as the channel reads it: each joined room's events, and each invitation's
/// stripped state.
fn sync_of(
    next_batch: String,
    joined: impl Iterator<Item = (OwnedRoomId, Vec<Event>)>,
    invited: BTreeMap<OwnedRoomId, sync_events::InvitedRoom>,
) -> Sync {
    let mut sync = Sync {
        next_batch,
        ..Sync::default()
    };
    for (room, events) in joined {
        let timeline = Timeline { events };
        sync.rooms
            .join
            .insert(room.to_string(), JoinedRoom { timeline });
    }
    for (room, invited) in invited {
        let events = invited
            .invite_state
            .events
            .iter()
            .filter_map(decode)
            .collect();
        let invite_state = InviteState { events };
        sync.rooms
            .invite
            .insert(room.to_string(), InvitedRoom { invite_state });
    }
    sync
}

fn room_id(room: &str) -> Result<OwnedRoomId, ApiError> {
    OwnedRoomId::try_from(room)
        .map_err(|e| ApiError::new(0, None, format!("not a room id {room:?}: {e}")))
}

/// The passphrase of the bot's stores: made once (32 random bytes, hex) in an owner-only file
/// beside them.
fn passphrase(dir: &Path) -> std::io::Result<String> {
    crate::store::private::create_dir(dir)?;
    crate::store::private::restrict(dir)?;
    let file = dir.join("store.key");
    if let Ok(kept) = std::fs::read_to_string(&file) {
        return Ok(kept.trim().to_string());
    }
    let mut bytes = [0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .map_err(|_| std::io::Error::other("no random bytes"))?;
    let made: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut out = crate::store::private::options()
        .write(true)
        .create_new(true)
        .open(&file)?;
    std::io::Write::write_all(&mut out, made.as_bytes())?;
    out.sync_all()?;
    Ok(made)
}

/// A library error as the kit's: the homeserver's status, `errcode` and wait when it answered,
/// "no answer" in words without the URL otherwise.
fn error(call: &str, e: &matrix_sdk::Error) -> ApiError {
    match e {
        matrix_sdk::Error::Http(http) => http_error(call, http),
        other => ApiError::new(0, None, format!("{call}: {other}")),
    }
}

fn http_error(call: &str, e: &matrix_sdk::HttpError) -> ApiError {
    use matrix_sdk::ruma::api::error::{ErrorBody, ErrorKind, RetryAfter};
    if let Some(refused) = e.as_client_api_error() {
        let status = refused.status_code.as_u16();
        let (code, message, retry_after) = match &refused.body {
            ErrorBody::Standard(body) => {
                let retry = match &body.kind {
                    ErrorKind::LimitExceeded(data) => match data.retry_after {
                        Some(RetryAfter::Delay(delay)) => wait(Some(delay.as_secs_f64())),
                        _ => None,
                    },
                    _ => None,
                };
                let code = body.kind.errcode().to_string();
                (Some(code), body.message.clone(), retry)
            }
            _ => (
                None,
                "an answer that is not a Matrix error".to_string(),
                None,
            ),
        };
        return ApiError {
            retry_after,
            ..ApiError::new(status, code, format!("{call}: {message}"))
        };
    }
    let why = match e {
        matrix_sdk::HttpError::Reqwest(r) if r.is_timeout() => "no answer in time".to_string(),
        matrix_sdk::HttpError::Reqwest(r) if r.is_connect() => "cannot connect".to_string(),
        matrix_sdk::HttpError::Reqwest(_) => "no answer".to_string(),
        other => other.to_string(),
    };
    ApiError::new(0, None, format!("{call}: {why} from the homeserver"))
}
