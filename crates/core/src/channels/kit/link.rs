//! The inbound driver of a chat channel's bot, for a platform whose messages come in by a link
//! the gateway holds (a long poll, a socket, an event stream): the platform writes one
//! [`Link`] — how the bot signs in, and one session of its link (one poll, one connection) —
//! and [`run`] does the rest: sign in, then session after session until the gateway stops; a
//! failed attempt waits (250 ms, doubling to 30 s) and tries again, and after
//! [`FAILURES_SHOWN`] in a row `health` shows the link failed with the reason while it keeps
//! trying; a refused credential shows the link failed at once, the log says why once, and the
//! bot tries again seldom (1 s, doubling to 5 min) until the platform takes it — a token mended
//! on the platform's side (or a platform that refused it by mistake) recovers by itself.
//! The platform resumes from its committed cursor inside its session: what it handed on is
//! committed with the cursor past it, so a restart or a reconnect neither loses a message nor
//! handles one twice.

use std::sync::Arc;
use std::time::Duration;

use super::{Bot, BotDoor, Chat, ChatPlatform, DoorParts};
use crate::channel::{Door, LinkState};

/// What a link is called while it is up, for a platform with no word of its own.
pub(crate) const CONNECTED: &str = "connected";
/// The first wait after a failure.
const FIRST_WAIT: Duration = Duration::from_millis(250);
/// Waits between failed attempts grow to this.
const LONGEST_WAIT: Duration = Duration::from_secs(30);
/// Failed attempts in a row before `health` shows the link failed (the driver keeps trying).
pub(crate) const FAILURES_SHOWN: u32 = 3;
/// The first wait after a refused credential; it doubles up to [`REFUSED_LONGEST`].
const REFUSED_FIRST: Duration = Duration::from_secs(1);
const REFUSED_LONGEST: Duration = Duration::from_secs(300);

/// Why an attempt failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Worth trying again after a wait (no answer, a dropped connection, a commit that failed).
    Retry(String),
    /// Refused (a token the platform will not take): tried again seldom, shown failed.
    Fatal(String),
}

/// How a session ended that did not fail.
pub(crate) enum Again {
    /// Start the next one at once (the next poll, a reconnect Slack or Discord asked for).
    Now,
    /// Start the next one after the first wait: a connection that was up ended by itself (a
    /// server that closes every connection at once must not be asked again in a tight loop).
    Soon,
    /// Start the next one after this wait (Discord asks for one before a new session).
    After(Duration),
}

/// One bot's inbound link, as its platform holds it.
pub(crate) trait Link: Send + 'static {
    /// Who the bot is, as the platform says (`getMe`, `auth.test`, `whoami`).
    type Me: Send + Sync;

    /// Signs in: who the bot is, and whatever the link needs before its first session (its
    /// stored cursor).
    fn sign_in(&mut self) -> impl Future<Output = Result<Self::Me, Failure>> + Send;

    /// One session: connect (or poll), hand each message on, until it ends. The session sets
    /// the link's state once it is up ([`Bot::link`]).
    fn session(&mut self, me: &Self::Me) -> impl Future<Output = Result<Again, Failure>> + Send;
}

/// A platform whose bots each hold a [`Link`].
pub(crate) trait Linked: ChatPlatform {
    type Link: Link;

    /// The link of the bot `door` holds.
    fn link(door: BotDoor<Self>) -> Self::Link;
}

/// The door of a [`Linked`] platform: one driver per bot.
pub(crate) struct Links<P: ChatPlatform> {
    chat: Arc<Chat<P>>,
    parts: DoorParts,
}

impl<P: Linked> Links<P> {
    pub fn new(chat: Arc<Chat<P>>, parts: &DoorParts) -> Arc<Self> {
        let parts = parts.clone();
        Arc::new(Self { chat, parts })
    }
}

impl<P: Linked> Door for Links<P> {
    /// Starts every bot's driver; each stops when intake stops.
    fn start(self: Arc<Self>) {
        for bot in self.chat.bots.iter() {
            bot.link.set(LinkState::Starting);
            let link = P::link(BotDoor {
                chat: self.chat.clone(),
                bot: bot.clone(),
                parts: self.parts.clone(),
            });
            let bot = bot.clone();
            self.parts
                .spawn_until_stopped(async move { run(&bot, link).await });
        }
    }
}

/// Drives `link` of `bot` until the gateway stops.
async fn run<P: ChatPlatform, L: Link>(bot: &Bot<P>, mut link: L) {
    let channel = P::name();
    let (mut wait, mut refused) = (Wait::default(), Refused::default());
    let me = loop {
        match link.sign_in().await {
            Ok(me) => break me,
            Err(Failure::Fatal(why)) => refused.after(channel, bot, why).await,
            Err(Failure::Retry(why)) => wait.after(channel, bot, &why).await,
        }
    };
    loop {
        let pause = match link.session(&me).await {
            Ok(Again::Now) => None,
            Ok(Again::Soon) => Some(FIRST_WAIT),
            Ok(Again::After(pause)) => Some(pause),
            Err(Failure::Retry(why)) => {
                wait.after(channel, bot, &why).await;
                continue;
            }
            Err(Failure::Fatal(why)) => {
                refused.after(channel, bot, why).await;
                continue;
            }
        };
        (wait, refused) = (Wait::default(), Refused::default());
        if let Some(pause) = pause {
            tokio::time::sleep(pause).await;
        }
    }
}

/// The wait after a refused credential, and what was last said of it.
struct Refused {
    next: Duration,
    said: Option<String>,
}

impl Default for Refused {
    fn default() -> Self {
        Self {
            next: REFUSED_FIRST,
            said: None,
        }
    }
}

impl Refused {
    /// Shows the link failed with `why` (logged once while it stays the same), waits, and
    /// doubles the next wait.
    async fn after<P: ChatPlatform>(&mut self, channel: &str, bot: &Bot<P>, why: String) {
        if self.said.as_deref() != Some(why.as_str()) {
            tracing::error!(channel, account = %bot.id, "{why}");
        }
        bot.link.set(LinkState::Failed(why.clone()));
        self.said = Some(why);
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(REFUSED_LONGEST);
    }
}

/// The wait before the next attempt, and the failures in a row so far.
struct Wait {
    next: Duration,
    failures: u32,
}

impl Default for Wait {
    fn default() -> Self {
        Self {
            next: FIRST_WAIT,
            failures: 0,
        }
    }
}

impl Wait {
    /// Says what failed, shows the link failed after [`FAILURES_SHOWN`] in a row (starting
    /// again before), waits, and doubles the next wait.
    async fn after<P: ChatPlatform>(&mut self, channel: &str, bot: &Bot<P>, why: &str) {
        self.failures += 1;
        tracing::warn!(channel, account = %bot.id, error = why, "retrying");
        bot.link.set(match self.failures >= FAILURES_SHOWN {
            true => LinkState::Failed(format!("{why}; retrying")),
            false => LinkState::Starting,
        });
        tokio::time::sleep(self.next).await;
        self.next = (self.next * 2).min(LONGEST_WAIT);
    }
}
