//! The one-pass `POST /` reader against the body read as a `Value`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(disagreement) = broker_oracle::oracle::readers::jsonrpc(data) {
        panic!("{disagreement}");
    }
});
