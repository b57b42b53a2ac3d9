//! The envelope's JSON string escaper against serde_json, on any UTF-8 text.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data)
        && let Err(disagreement) = broker_oracle::oracle::readers::json_string(text)
    {
        panic!("{disagreement}");
    }
});
