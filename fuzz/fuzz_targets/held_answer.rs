//! Held connections' answer reading against hyper's HTTP/1.1 client.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(disagreement) = broker_oracle::oracle::held::answer(data) {
        panic!("{disagreement}");
    }
});
