//! The one-pass MCP message reader against the body read as a `Value`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(disagreement) = broker_oracle::oracle::readers::mcp_message(data) {
        panic!("{disagreement}");
    }
});
