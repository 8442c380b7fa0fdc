//! The store's domain rules, written once for every backend (docs/architecture.md, "The store
//! seam"). Each function computes from plain data what a backend writes or answers: what a
//! reset clears, how appended messages are numbered and which one is the summary, how a list
//! filters and pages, whom pairing admits and approves, how a record becomes a row and back.
//!
//! Nothing here touches a connection: a backend runs its dialect's SQL (`super::dialect`) around
//! these functions, in its own transactions, with its own locks and fences.

pub(crate) mod list;
pub(crate) mod pairing;
pub(crate) mod rows;
pub(crate) mod sessions;
pub(crate) mod transcript;
pub(crate) mod work;

#[cfg(test)]
mod tests;
