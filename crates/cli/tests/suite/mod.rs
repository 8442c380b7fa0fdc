mod commands;
mod durability;
mod mcp;
mod process;
