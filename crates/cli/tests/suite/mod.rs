mod commands;
mod durability;
mod process;
mod spawn;
