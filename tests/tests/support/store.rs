//! The PostgreSQL store the suites share when `TOOL_BROKER_TEST_DATABASE_URL` names one.

use tool_broker::store::StoreConfig;

/// A fresh PostgreSQL schema's store config; panics (fails the test) without the variable.
pub fn postgres(name: &str) -> StoreConfig {
    let url = std::env::var(PG_VAR).unwrap_or_else(|_| {
        panic!("{PG_VAR} is not set: this PostgreSQL test needs a server (postgres://postgres@127.0.0.1:5432/test)")
    });
    let mut nonce = [0u8; 4];
    clock_bytes(&mut nonce);
    let schema = format!(
        "tb_{name}_{}",
        nonce.iter().map(|b| format!("{b:02x}")).collect::<String>()
    );
    StoreConfig::Postgres {
        url,
        schema: Some(schema),
    }
}

/// The variable that names the PostgreSQL server.
const PG_VAR: &str = "TOOL_BROKER_TEST_DATABASE_URL";

/// Bytes from the clock: a schema name no earlier run used.
fn clock_bytes(buf: &mut [u8]) {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    for (i, b) in buf.iter_mut().enumerate() {
        *b = u8::try_from((t >> (i * 8)) & 0xff).unwrap() ^ u8::try_from(i * 37 % 256).unwrap();
    }
    let pid = std::process::id().to_le_bytes();
    for (b, p) in buf.iter_mut().zip(pid) {
        *b ^= p;
    }
}
