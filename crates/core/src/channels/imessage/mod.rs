//! `imessage`, a channel the seeds name that this gateway does not offer: iMessage can only be
//! reached from macOS (Messages.app on a signed-in Mac), and the gateway runs anywhere. It is in
//! the registry so that a delivery to it, or a `send` naming it, fails at once with that reason
//! instead of "not connected".

use crate::channel::{Channel, ChannelError, Sent};
use crate::store::DeliveryRecord;

/// The channel's name in keys and routes.
pub const IMESSAGE: &str = "imessage";

/// Why nothing goes to iMessage.
const NOT_OFFERED: &str = "the imessage channel is not offered: iMessage can only be reached from macOS (Messages.app on a signed-in Mac), which this gateway does not need or use; see docs/channels/README.md";

/// The registry entry that refuses every delivery with [`NOT_OFFERED`].
pub struct IMessage;

impl Channel for IMessage {
    fn name(&self) -> &'static str {
        IMESSAGE
    }

    fn send<'a>(&'a self, _record: &'a DeliveryRecord) -> Sent<'a> {
        Box::pin(async { Err(ChannelError::Permanent(NOT_OFFERED.to_owned())) })
    }

    fn check_account(&self, _account_id: Option<&str>) -> Result<(), String> {
        Err(NOT_OFFERED.to_owned())
    }

    fn offered(&self) -> bool {
        false
    }
}
