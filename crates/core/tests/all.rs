//! The core crate's one integration-test binary.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
