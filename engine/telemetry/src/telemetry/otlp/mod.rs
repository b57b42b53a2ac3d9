//! OTLP export of the broker's spans over HTTP (`http/protobuf` or `http/json`), set by
//! the standard `OTEL_*` variables: `config` reads them, `encode` writes a batch,
//! `export` queues finished spans and posts them from a background task.

pub mod config;
pub mod encode;
pub mod export;
