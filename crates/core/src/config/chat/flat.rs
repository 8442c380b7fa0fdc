//! A chat channel's section (and each of its accounts) is one JSON object whose keys belong to
//! two types: the kit's (`enabled`, `agentId`, the [`Access`] settings, `accounts`), read here
//! key by key, and the platform's, read by its derived `Deserialize` from the keys left over.
//! Both read through the loader's deserializer, so an unknown key is still reported at its full
//! path and a bad value at its own: serde's `flatten` would buffer the values and lose both.

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::ser::{Error as _, SerializeMap};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Access, ChatAccount, ChatSection, Platform};

/// The part of an object a type reads key by key; the rest is left to another type.
trait Keys {
    /// Reads `key`'s value from `map` when `key` is one of this type's; false: not one.
    fn take<'de, M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<bool, M::Error>;
}

/// An object's keys that `keys` does not take, for a derived `Deserialize` to read.
struct Rest<'k, M, K> {
    map: M,
    keys: &'k mut K,
}

impl<'de, M: MapAccess<'de>, K: Keys> MapAccess<'de> for Rest<'_, M, K> {
    type Error = M::Error;

    fn next_key_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, M::Error> {
        while let Some(key) = self.map.next_key::<String>()? {
            if !self.keys.take(&key, &mut self.map)? {
                return seed.deserialize(key.into_deserializer()).map(Some);
            }
        }
        Ok(None)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, M::Error> {
        self.map.next_value_seed(seed)
    }
}

/// The platform's settings of an object whose other keys `keys` takes.
fn read_split<'de, M, K, P>(map: M, keys: &mut K) -> Result<P, M::Error>
where
    M: MapAccess<'de>,
    K: Keys,
    P: Deserialize<'de>,
{
    P::deserialize(MapAccessDeserializer::new(Rest { map, keys }))
}

impl Access {
    /// Reads `key` when it is an access setting (`groups` is the channel's name for its map of
    /// groups).
    fn take<'de, M: MapAccess<'de>>(
        &mut self,
        (key, groups): (&str, &str),
        map: &mut M,
    ) -> Result<bool, M::Error> {
        match key {
            "dmPolicy" => self.dm_policy = map.next_value()?,
            "allowFrom" => self.allow_from = map.next_value()?,
            "owners" => self.owners = map.next_value()?,
            "groupPolicy" => self.group_policy = map.next_value()?,
            "groupAllowFrom" => self.group_allow_from = map.next_value()?,
            "requireMention" => self.require_mention = map.next_value()?,
            "allowBots" => self.allow_bots = map.next_value()?,
            "textChunkLimit" => self.text_chunk_limit = map.next_value()?,
            "maxReplyParts" => self.max_reply_parts = map.next_value()?,
            "maxInboundChars" => self.max_inbound_chars = map.next_value()?,
            _ if key == groups => self.groups = map.next_value()?,
            _ => return Ok(false),
        }
        Ok(true)
    }

    /// Writes every access setting (unset ones as null, so that every key is known).
    fn write<S: SerializeMap>(&self, groups: &str, map: &mut S) -> Result<(), S::Error> {
        map.serialize_entry("dmPolicy", &self.dm_policy)?;
        map.serialize_entry("allowFrom", &self.allow_from)?;
        map.serialize_entry("owners", &self.owners)?;
        map.serialize_entry("groupPolicy", &self.group_policy)?;
        map.serialize_entry(groups, &self.groups)?;
        map.serialize_entry("groupAllowFrom", &self.group_allow_from)?;
        map.serialize_entry("requireMention", &self.require_mention)?;
        map.serialize_entry("allowBots", &self.allow_bots)?;
        map.serialize_entry("textChunkLimit", &self.text_chunk_limit)?;
        map.serialize_entry("maxReplyParts", &self.max_reply_parts)?;
        map.serialize_entry("maxInboundChars", &self.max_inbound_chars)
    }
}

impl<P: Platform> Keys for ChatSection<P> {
    fn take<'de, M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<bool, M::Error> {
        match key {
            "enabled" => self.enabled = map.next_value()?,
            "agentId" => self.agent_id = map.next_value()?,
            "accounts" if P::ACCOUNTS => self.accounts = map.next_value()?,
            _ => return self.access.take((key, P::GROUPS.1), map),
        }
        Ok(true)
    }
}

impl<P: Platform> Keys for ChatAccount<P> {
    fn take<'de, M: MapAccess<'de>>(&mut self, key: &str, map: &mut M) -> Result<bool, M::Error> {
        match key {
            "enabled" => self.enabled = map.next_value()?,
            "agentId" => self.agent_id = map.next_value()?,
            _ => return self.access.take((key, P::GROUPS.1), map),
        }
        Ok(true)
    }
}

/// Reads a section or an account: a `T` (its kit part, from its default) and its platform's
/// settings.
struct SplitVisitor<T, P>(PhantomData<(T, P)>);

/// What holds a platform's settings beside the kit's.
trait HasBot<P> {
    fn set_bot(&mut self, bot: P);
}

impl<P> HasBot<P> for ChatSection<P> {
    fn set_bot(&mut self, bot: P) {
        self.bot = bot;
    }
}

impl<P> HasBot<P> for ChatAccount<P> {
    fn set_bot(&mut self, bot: P) {
        self.bot = bot;
    }
}

impl<'de, T, P> Visitor<'de> for SplitVisitor<T, P>
where
    T: Keys + HasBot<P> + Default,
    P: Platform,
{
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "the settings of the {} channel (an object)", P::NAME)
    }

    fn visit_map<M: MapAccess<'de>>(self, map: M) -> Result<T, M::Error> {
        let mut value = T::default();
        let bot: P = read_split(map, &mut value)?;
        value.set_bot(bot);
        Ok(value)
    }
}

impl<'de, P: Platform> Deserialize<'de> for ChatSection<P> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(SplitVisitor::<Self, P>(PhantomData))
    }
}

impl<'de, P: Platform> Deserialize<'de> for ChatAccount<P> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(SplitVisitor::<Self, P>(PhantomData))
    }
}

/// Writes the platform's settings `bot` into `map`, beside the kit's.
fn write_bot<P: Serialize, S: SerializeMap>(bot: &P, map: &mut S) -> Result<(), S::Error> {
    match serde_json::to_value(bot).map_err(S::Error::custom)? {
        serde_json::Value::Object(fields) => {
            for (key, value) in &fields {
                map.serialize_entry(key, value)?;
            }
            Ok(())
        }
        _ => Err(S::Error::custom("a platform's settings are an object")),
    }
}

impl<P: Platform> Serialize for ChatSection<P> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("enabled", &self.enabled)?;
        map.serialize_entry("agentId", &self.agent_id)?;
        write_bot(&self.bot, &mut map)?;
        self.access.write(P::GROUPS.1, &mut map)?;
        if P::ACCOUNTS {
            map.serialize_entry("accounts", &self.accounts)?;
        }
        map.end()
    }
}

impl<P: Platform> Serialize for ChatAccount<P> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("enabled", &self.enabled)?;
        map.serialize_entry("agentId", &self.agent_id)?;
        write_bot(&self.bot, &mut map)?;
        self.access.write(P::GROUPS.1, &mut map)?;
        map.end()
    }
}
