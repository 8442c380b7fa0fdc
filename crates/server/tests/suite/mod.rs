mod harness;
mod history;
mod protocol;
mod sessions;
