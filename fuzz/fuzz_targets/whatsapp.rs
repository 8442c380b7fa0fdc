//! A WhatsApp Cloud API webhook notification (`crates/core/src/channels/whatsapp`): each text
//! message's body without mentions of the number (no mention of it left), or an error that says
//! what was wrong.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_core::channels::whatsapp;

fuzz_target!(|data: &[u8]| {
    switchboard_fuzz::channel(data, whatsapp::fuzz_inbound, |text| {
        !text.contains("@15550001111")
    });
});
