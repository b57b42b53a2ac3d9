//! The own HTTP/1.1 server's request head reading against hyper's HTTP/1.1 server.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    if let Err(disagreement) = broker_oracle::oracle::http1::head(data) {
        panic!("{disagreement}");
    }
});
