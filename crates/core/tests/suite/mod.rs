mod providers;
mod runtime;
