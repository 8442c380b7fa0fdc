mod commands;
mod demo;
mod durability;
mod exchange_durability;
mod mcp;
mod process;
mod spawn;
mod spawn_durability;
