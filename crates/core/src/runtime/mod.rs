//! The agent runtime: model providers, runs (the tool-call loop), per-session FIFO queues and
//! lanes. (Being written.)

pub mod providers;
