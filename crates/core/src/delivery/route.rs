//! Where a session's outbound messages go (SPEC §9.1).

use switchboard_protocol::sessions::DeliveryContext;

use crate::channel::is_route;
use crate::store::SessionEntry;

/// The session's delivery route: its recorded `deliveryContext` (from the last inbound channel
/// message), else one derived from a group or channel key (`<channel>:group:<id>` → that chat,
/// with the thread of a `:thread:` key and the account last seen). `webchat` and `internal` are
/// not routes: their sessions are read in the gateway itself, so an announce to them stays in
/// the transcript.
pub fn route_of(entry: &SessionEntry) -> Option<DeliveryContext> {
    let recorded = entry
        .delivery_context
        .clone()
        .filter(|route| is_route(&route.channel) && !route.to.is_empty());
    recorded.or_else(|| {
        let key = &entry.key;
        let channel = key.channel().filter(|c| is_route(c))?;
        let to = key.chat_id()?;
        Some(DeliveryContext {
            channel: channel.to_string(),
            to: to.to_string(),
            account_id: entry.last_account_id.clone(),
            thread_id: key.thread_id().map(str::to_string),
        })
    })
}
