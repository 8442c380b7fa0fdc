mod cron;
mod providers;
mod restart;
mod runtime;
mod send;
mod session_tools;
mod spawn;
mod support;
