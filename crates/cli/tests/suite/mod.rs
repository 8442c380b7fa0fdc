mod commands;
mod durability;
mod process;
