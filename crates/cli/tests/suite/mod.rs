mod commands;
mod demo;
mod durability;
mod process;
mod spawn;
mod spawn_durability;
