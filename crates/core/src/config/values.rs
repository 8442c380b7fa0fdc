//! Setting values with more than one spelling in the file: `gateway.bind` and model references.
//! Both serialise back to the shortest form, so `config show` prints what a user would write.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `gateway.bind`: `"loopback"`, `"lan"` (every interface) or an IP address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GatewayBind {
    /// 127.0.0.1 only.
    #[default]
    Loopback,
    /// Every interface (0.0.0.0).
    Lan,
    /// One address.
    Address(IpAddr),
}

impl GatewayBind {
    /// What `gateway.bind` accepts, for error messages.
    pub const EXPECTED: &'static str = "\"loopback\", \"lan\" or an IP address";

    /// The address to listen on.
    pub fn ip(self) -> IpAddr {
        match self {
            GatewayBind::Loopback => IpAddr::V4(Ipv4Addr::LOCALHOST),
            GatewayBind::Lan => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            GatewayBind::Address(ip) => ip,
        }
    }

    /// Whether only this machine can connect (the only case where `auth.mode: "none"` is allowed).
    pub fn is_loopback(self) -> bool {
        self.ip().is_loopback()
    }

    /// Parses the file's spelling.
    pub fn parse(text: &str) -> Option<GatewayBind> {
        match text.trim() {
            "loopback" => Some(GatewayBind::Loopback),
            "lan" => Some(GatewayBind::Lan),
            other => other.parse().ok().map(GatewayBind::Address),
        }
    }
}

impl fmt::Display for GatewayBind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GatewayBind::Loopback => f.write_str("loopback"),
            GatewayBind::Lan => f.write_str("lan"),
            GatewayBind::Address(ip) => write!(f, "{ip}"),
        }
    }
}

impl Serialize for GatewayBind {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for GatewayBind {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct BindVisitor;

        impl Visitor<'_> for BindVisitor {
            type Value = GatewayBind;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(GatewayBind::EXPECTED)
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<GatewayBind, E> {
                GatewayBind::parse(v).ok_or_else(|| E::invalid_value(de::Unexpected::Str(v), &self))
            }
        }

        deserializer.deserialize_str(BindVisitor)
    }
}

/// A model reference: `"provider/model"`, or `{ primary: "provider/model", fallbacks: [...] }`.
/// The model part may itself contain `/` (`openrouter/anthropic/claude-sonnet-4-5`): the provider
/// is everything before the first `/`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ModelRef {
    /// The model tried first.
    pub primary: String,
    /// Models tried in order when the primary fails.
    pub fallbacks: Vec<String>,
}

impl ModelRef {
    /// What a model reference accepts, for error messages.
    pub const EXPECTED: &'static str =
        "a \"provider/model\" string or { primary: \"provider/model\", fallbacks: [...] }";

    /// A reference with no fallbacks.
    pub fn new(primary: impl Into<String>) -> ModelRef {
        ModelRef {
            primary: primary.into(),
            fallbacks: Vec::new(),
        }
    }

    /// Splits `"provider/model"` into its parts; `None` unless both are non-empty.
    pub fn split(reference: &str) -> Option<(&str, &str)> {
        let (provider, model) = reference.split_once('/')?;
        if provider.is_empty() || model.is_empty() {
            return None;
        }
        Some((provider, model))
    }

    /// The primary first, then the fallbacks.
    pub fn all(&self) -> impl Iterator<Item = &str> {
        std::iter::once(self.primary.as_str()).chain(self.fallbacks.iter().map(String::as_str))
    }
}

/// The object form, read through serde so that unknown keys inside it are reported like any
/// other unknown path.
#[derive(Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ModelRefObject {
    primary: String,
    fallbacks: Vec<String>,
}

impl Serialize for ModelRef {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.fallbacks.is_empty() {
            serializer.serialize_str(&self.primary)
        } else {
            ModelRefObject {
                primary: self.primary.clone(),
                fallbacks: self.fallbacks.clone(),
            }
            .serialize(serializer)
        }
    }
}

impl<'de> Deserialize<'de> for ModelRef {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RefVisitor;

        impl<'de> Visitor<'de> for RefVisitor {
            type Value = ModelRef;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(ModelRef::EXPECTED)
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<ModelRef, E> {
                Ok(ModelRef::new(v))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ModelRef, A::Error> {
                let object =
                    ModelRefObject::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(ModelRef {
                    primary: object.primary,
                    fallbacks: object.fallbacks,
                })
            }
        }

        deserializer.deserialize_any(RefVisitor)
    }
}
