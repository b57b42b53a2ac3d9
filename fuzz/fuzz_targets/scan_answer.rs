//! The one-pass answer scan with redaction against parse, redact, cut, write.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(disagreement) = broker_oracle::oracle::scan::answer(data) {
        panic!("{disagreement}");
    }
});
