//! Request mapping with hostile arguments: renders or refuses, no panic, bounded fuel.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(disagreement) = broker_oracle::oracle::render::hostile(data) {
        panic!("{disagreement}");
    }
});
