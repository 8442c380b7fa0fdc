//! DM pairing (`dmPolicy: "pairing"`, the reference's default): a sender the policy does not
//! know gets a one-time code in their chat and nothing runs; an operator approves the code
//! (`pairing.approve`, `switchboard pairing approve telegram <CODE>`) and from then on the
//! sender is let in. Codes are 8 characters without look-alikes (`0O1I`), good for an hour; a
//! bot keeps at most 3 pending requests, and a sender with a pending request gets no new code
//! (so a stranger cannot make the bot spam).

use std::sync::Arc;
use switchboard_protocol::delivery::DeliveryKind;

use switchboard_protocol::pairing::{
    ChannelPairingRequest, ChannelsPairingList, PairingAccount, PairingApproveParams,
    PairingApproveResult, PairingLimits, PairingListParams, PairingListResult, PairingRequest,
};
use switchboard_protocol::sessions::DeliveryContext;

use crate::channel::Channels;
use crate::clock::Clock;
use crate::delivery::{Outbound, Outbox};
use crate::error::{CoreError, CoreResult};
use crate::store::{PairingAdmission, PairingAsk, PairingRecord, Store};

/// How long a code is good.
pub const CODE_TTL_MS: i64 = 60 * 60 * 1000;
/// Pending requests per bot.
pub const MAX_PENDING: usize = 3;
/// 32 characters: each random byte picks one without bias.
const ALPHABET: &[u8; 32] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/// The pairing component.
pub struct Pairing {
    store: Arc<dyn Store>,
    outbox: Arc<Outbox>,
    clock: Arc<dyn Clock>,
    /// Which channels pair (the channel seam's pairing hook).
    channels: Arc<Channels>,
}

/// A sender of one bot that the policy does not know.
pub(crate) struct Stranger {
    pub channel: &'static str,
    /// What the channel calls a sender's id, for the code message (`Telegram user id`).
    pub id_name: &'static str,
    pub account_id: String,
    pub id: String,
    pub username: Option<String>,
    /// What the sender sent (the channel's message id): a replay of it answers the same code.
    pub source: String,
    /// Whether the sender is given a code (`dmPolicy: "pairing"`); else (`allowlist`) only a
    /// sender approved before is let in.
    pub ask: bool,
}

/// What to do with a stranger's message.
pub(crate) enum Verdict {
    /// Approved: the message goes on.
    Pass,
    /// Answer this (the code) in the chat; nothing runs.
    Answer(String),
    /// Nothing runs and nothing is said, and why (for the log).
    Silent(&'static str),
}

impl Pairing {
    pub fn new(
        store: Arc<dyn Store>,
        outbox: Arc<Outbox>,
        clock: Arc<dyn Clock>,
        channels: Arc<Channels>,
    ) -> Self {
        Self {
            store,
            outbox,
            clock,
            channels,
        }
    }

    /// Approved before, a new code, the same code again for a replayed message, or silence.
    pub(super) async fn check(&self, who: Stranger) -> CoreResult<Verdict> {
        let id_name = who.id_name;
        let approved = self
            .store
            .pairing_approved(who.channel, &who.account_id, &who.id)
            .await?;
        if approved {
            return Ok(Verdict::Pass);
        }
        if !who.ask {
            return Ok(Verdict::Silent(
                "the sender is neither in allowFrom nor approved by pairing (dmPolicy allowlist)",
            ));
        }
        let ask = PairingAsk {
            record: PairingRecord {
                channel: who.channel.into(),
                account_id: who.account_id,
                sender_id: who.id,
                username: who.username,
                code: new_code(),
                created_at: 0,
                approved_at: None,
                source: who.source.clone(),
            },
            ttl_ms: CODE_TTL_MS,
            max_pending: MAX_PENDING,
        };
        Ok(match self.store.pairing_admit(ask).await? {
            PairingAdmission::Approved => Verdict::Pass,
            PairingAdmission::Created(record) => Verdict::Answer(code_message(&record, id_name)),
            PairingAdmission::Pending(record) if record.source == who.source => {
                Verdict::Answer(code_message(&record, id_name))
            }
            PairingAdmission::Pending(_) => Verdict::Silent("the sender's pairing code is pending"),
            PairingAdmission::Full => Verdict::Silent("too many pairing requests are pending"),
        })
    }

    /// `pairing.list`: the pending requests, oldest first.
    /// `channel: "*"`: every channel's, by channel.
    pub async fn list(&self, p: PairingListParams) -> CoreResult<PairingListResult> {
        let every = p.channel.as_deref().map(str::trim) == Some(ALL);
        let channels = match every {
            true => self.channels.pairing(),
            false => vec![channel(&self.channels, p.channel.as_deref())?],
        };
        let account = p.account_id.map(|a| a.trim().to_lowercase());
        let since = self.clock.now_ms() - CODE_TTL_MS;
        let mut requests = Vec::new();
        for channel in &channels {
            let pending = self
                .store
                .pairing_pending(channel, account.as_deref(), since);
            requests.extend(pending.await?.iter().map(request));
        }
        Ok(PairingListResult {
            channel: match every {
                true => ALL.into(),
                false => channels[0].into(),
            },
            requests,
        })
    }

    /// `channels.pairing.list`: the accounts of the channels that pair strangers, and every
    /// pending request, in the reference's fields.
    pub async fn channels_list(&self) -> CoreResult<ChannelsPairingList> {
        let pairs = self.channels.pairing();
        let statuses = self.channels.statuses();
        let label = |name: &str| {
            (statuses.iter().find(|s| s.name == name)).map_or(name.to_string(), |s| s.label.into())
        };
        let accounts = (statuses.iter().filter(|s| pairs.contains(&s.name)))
            .flat_map(|s| {
                s.accounts.iter().map(|a| PairingAccount {
                    channel: s.name.into(),
                    channel_label: s.label.into(),
                    account_id: a.account_id.clone(),
                    notify_supported: true,
                })
            })
            .collect();
        let every = PairingListParams {
            channel: Some(ALL.into()),
            account_id: None,
        };
        let requests = (self.list(every).await?.requests.into_iter())
            .map(|r| ChannelPairingRequest {
                request_id: r.code.clone(),
                channel_label: label(&r.channel),
                channel: r.channel,
                account_id: r.account_id,
                sender_id: r.id,
                sender_label: r.username,
                code: r.code,
                created_at: crate::store::iso8601(r.created_at),
                last_seen_at: crate::store::iso8601(r.created_at),
                expires_at: crate::store::iso8601(r.expires_at),
                notify_supported: true,
            })
            .collect();
        Ok(ChannelsPairingList {
            accounts,
            requests,
            limits: PairingLimits {
                pending_per_account: MAX_PENDING,
                ttl_ms: CODE_TTL_MS,
            },
        })
    }

    /// `pairing.approve`: the sender of the pending request with this code is let in (and told
    /// so, with `notify`).
    pub async fn approve(&self, p: PairingApproveParams) -> CoreResult<PairingApproveResult> {
        let channel = channel(&self.channels, p.channel.as_deref())?;
        let code = p.code.trim().to_uppercase();
        if code.is_empty() {
            return Err(CoreError::invalid(
                "pairing.approve: code is required (the 8 characters the sender was given; \
                 `switchboard pairing list` shows the pending ones)",
            ));
        }
        let account = p.account_id.map(|a| a.trim().to_lowercase());
        let since = self.clock.now_ms() - CODE_TTL_MS;
        let record = self
            .store
            .pairing_approve(channel, account.as_deref(), &code, since)
            .await?;
        tracing::info!(
            channel,
            account = %record.account_id,
            sender = %record.sender_id,
            "pairing: a sender was approved"
        );
        let mut notice = None;
        if p.notify {
            let text = "switchboard: an owner approved you; you can talk to this bot now.";
            let stored = self
                .outbox
                .deliver(Outbound {
                    kind: DeliveryKind::Pairing,
                    session_key: None,
                    source_key: None,
                    run_id: None,
                    route: Some(DeliveryContext {
                        channel: channel.into(),
                        to: record.sender_id.clone(),
                        account_id: Some(record.account_id.clone()),
                        thread_id: None,
                    }),
                    text: text.into(),
                    idempotency_key: Some(format!(
                        "pairing:{channel}:{}:{}",
                        record.account_id, record.sender_id
                    )),
                })
                .await?;
            notice = Some(stored.id);
        }
        Ok(PairingApproveResult {
            ok: true,
            approved: request(&record),
            notice_delivery_id: notice,
        })
    }
}

/// The channel named (default: the first that pairs, `telegram`), which must pair.
/// The `channel` of `pairing.list` that lists every channel's requests.
const ALL: &str = "*";

fn channel(channels: &Channels, name: Option<&str>) -> CoreResult<&'static str> {
    let pairing = channels.pairing();
    let name = name.map(|n| n.trim().to_lowercase());
    let name = match name.as_deref() {
        Some(name) => name,
        None => pairing.first().copied().unwrap_or_default(),
    };
    pairing
        .iter()
        .find(|c| **c == name)
        .copied()
        .ok_or_else(|| {
            CoreError::invalid(format!(
                "channel: {name} has no pairing (channels with pairing: {})",
                pairing.join(", ")
            ))
        })
}

fn request(r: &PairingRecord) -> PairingRequest {
    PairingRequest {
        channel: r.channel.clone(),
        account_id: r.account_id.clone(),
        id: r.sender_id.clone(),
        username: r.username.clone(),
        code: r.code.clone(),
        created_at: r.created_at,
        expires_at: r.created_at + CODE_TTL_MS,
        approved_at: r.approved_at,
    }
}

/// What a stranger is told.
fn code_message(r: &PairingRecord, id_name: &str) -> String {
    format!(
        "switchboard: access not configured.\nYour {id_name}: {}\nPairing code: {}\n\
         Ask the bot owner to approve with: switchboard pairing approve {} {}",
        r.sender_id, r.code, r.channel, r.code
    )
}

/// 8 characters of [`ALPHABET`] from a random UUID's bytes (not byte 6, whose low five bits
/// include a fixed version bit).
fn new_code() -> String {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    [0, 1, 2, 3, 4, 5, 7, 9]
        .iter()
        .map(|&i| ALPHABET[usize::from(bytes[i]) % ALPHABET.len()] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_8_characters_without_look_alikes() {
        for _ in 0..200 {
            let code = new_code();
            assert_eq!(code.len(), 8);
            assert!(
                code.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
            );
            assert!(!code.contains(['0', 'O', '1', 'I']), "{code}");
        }
    }

    /// A channel that pairs, as Telegram does.
    struct Pairs;

    impl crate::channel::Channel for Pairs {
        fn name(&self) -> &'static str {
            "telegram"
        }

        fn send<'a>(&'a self, _: &'a crate::store::DeliveryRecord) -> crate::channel::Sent<'a> {
            Box::pin(async { Ok(Vec::new()) })
        }

        fn pairs(&self) -> bool {
            true
        }
    }

    #[test]
    fn only_telegram_pairs() {
        let channels = Channels::new(vec![Arc::new(Pairs)]);
        let channel = |name| channel(&channels, name);
        assert_eq!(channel(None).unwrap(), "telegram");
        assert_eq!(channel(Some(" Telegram ")).unwrap(), "telegram");
        let e = channel(Some("discord")).unwrap_err().to_string();
        assert!(e.contains("discord has no pairing"), "{e}");
    }
}
