mod harness;
mod history;
mod protocol;
mod runs;
mod sessions;
