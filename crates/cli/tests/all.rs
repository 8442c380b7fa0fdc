//! The CLI's one integration-test binary: it runs the real `switchboard` executable.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
