//! Config text (`switchboard_core::config::load_str`): JSON5 → `${ENV}` → typed → validated, or
//! an error that names the line, the position or the path of every problem. A config that loads
//! re-encodes (as JSON, which is JSON5) to text that loads to the same config.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_core::config::load_str;
use switchboard_fuzz::says;

/// One variable is set, so both sides of `${VAR}` substitution run.
fn env(name: &str) -> Option<String> {
    (name == "SET").then(|| "value".to_string())
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return; // the file is read as UTF-8 text; other bytes never reach the loader
    };
    match load_str(text, "fuzz.json5", &env) {
        Ok(loaded) => {
            let again = serde_json::to_string(&loaded.config).unwrap_or_default();
            // A loaded string may hold `${` (written `$${`); re-encoded it would be a reference.
            if again.contains("${") {
                return;
            }
            match load_str(&again, "re-encoded", &env) {
                Ok(reloaded) => {
                    assert_eq!(reloaded.config, loaded.config, "re-encoded as {again}");
                    assert!(
                        reloaded.unknown_paths.is_empty(),
                        "{:?}",
                        reloaded.unknown_paths
                    );
                }
                Err(e) => panic!("loaded once, but not re-encoded as {again}: {e}"),
            }
        }
        Err(e) => says(&e.to_string(), &["line ", " at "]),
    }
});
