//! The server's one integration-test binary: a real gateway on port 0, real WebSockets, a real
//! SQLite file in a temp dir.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
