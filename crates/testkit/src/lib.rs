//! Test support: being written.
