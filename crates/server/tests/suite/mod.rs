mod cron;
mod harness;
mod history;
mod policy;
mod protocol;
mod runs;
mod sessions;
mod tools;
