//! Enums whose values are names on the wire (a run's status, a session's kind, …): one macro
//! states each variant's name once, and it serves serde, `as_str`, `Display` and comparison
//! with a name, so the two can never disagree.

/// An enum of wire names: `wire_names! { /// doc
/// pub enum RunState { Queued = "queued", Running = "running" } }`.
macro_rules! wire_names {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$vmeta:meta])* $variant:ident = $wire:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $($(#[$vmeta])* #[serde(rename = $wire)] $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The name on the wire.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $wire),+
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, name: &&str) -> bool {
                self.as_str() == *name
            }
        }
    };
}
