mod commands;
mod durability;
mod mcp;
mod process;
mod spawn_durability;
