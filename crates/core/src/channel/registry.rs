//! The registry of channels the composition root builds: every channel this gateway connects,
//! in the order they were registered (the order `send`'s refusals list them and `health` shows
//! them). A name is looked up here and nowhere else.

use std::sync::Arc;

use super::{Channel, ChannelError, ChannelStatus};
use crate::store::{DeliveryRecord, WriteOp};

/// Every connected channel.
#[derive(Clone, Default)]
pub struct Channels {
    list: Vec<Arc<dyn Channel>>,
}

impl Channels {
    /// The registry of `list`, in that order; a later channel of the same name is ignored.
    pub fn new(list: Vec<Arc<dyn Channel>>) -> Self {
        let mut unique: Vec<Arc<dyn Channel>> = Vec::with_capacity(list.len());
        for channel in list {
            if unique.iter().all(|c| c.name() != channel.name()) {
                unique.push(channel);
            }
        }
        Self { list: unique }
    }

    /// The channel named `name` (already trimmed and lower-cased), when it is connected.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Channel>> {
        self.list.iter().find(|c| c.name() == name)
    }

    /// The names of every connected channel: where a delivery can go.
    pub fn names(&self) -> Vec<&'static str> {
        self.list
            .iter()
            .filter(|c| c.offered())
            .map(|c| c.name())
            .collect()
    }

    /// The channels that pair unknown private senders, in order (the first is the default of
    /// `pairing.*`).
    pub fn pairing(&self) -> Vec<&'static str> {
        self.list
            .iter()
            .filter(|c| c.pairs())
            .map(|c| c.name())
            .collect()
    }

    /// The state of every channel that reports one, in order.
    pub fn statuses(&self) -> Vec<ChannelStatus> {
        self.list.iter().filter_map(|c| c.status()).collect()
    }

    /// The state of the channel named `name`, when it reports one.
    pub fn status(&self, name: &str) -> Option<ChannelStatus> {
        self.get(name).and_then(|c| c.status())
    }

    /// One attempt to deliver `record` by its channel; a channel this gateway does not connect
    /// (`discord` in a key, say) fails permanently, saying which ones it does.
    pub async fn send(&self, record: &DeliveryRecord) -> Result<Vec<WriteOp>, ChannelError> {
        match self.get(&record.channel) {
            Some(channel) => channel.send(record).await,
            None => Err(ChannelError::Permanent(format!(
                "channel {} is not connected to this gateway (deliverable channels: {})",
                record.channel,
                self.names().join(", ")
            ))),
        }
    }
}
