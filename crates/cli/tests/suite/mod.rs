mod commands;
mod demo;
mod durability;
mod logging;
mod mcp;
mod process;
mod spawn;
mod spawn_durability;
