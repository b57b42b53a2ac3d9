//! An authorization server's part for the benchmarks (`bench/profile.sh` with
//! `AUTH=token`): makes an Ed25519 key, writes the OpenID discovery document and the JWK
//! set a static web server then serves, and prints one access token for the broker.
//!
//! ```text
//! mint --issuer http://127.0.0.1:9000 --audience http://127.0.0.1:8080/mcp --out DIR
//! ```
//! Writes `DIR/.well-known/openid-configuration` and `DIR/jwks.json`; prints the token
//! (`scope` `tools:read tools:write`, valid for an hour).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    reason = "a benchmark helper stops on a broken setup"
)]

use aws_lc_rs::signature::{Ed25519KeyPair, KeyPair};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::json;

fn arg(name: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    let at = args
        .iter()
        .position(|a| a == name)
        .unwrap_or_else(|| panic!("{name} is required"));
    args[at + 1].clone()
}

fn main() {
    let (issuer, audience, out) = (arg("--issuer"), arg("--audience"), arg("--out"));
    let out = std::path::Path::new(&out);
    let key = Ed25519KeyPair::generate().unwrap();
    let b64 = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(bytes);
    std::fs::create_dir_all(out.join(".well-known")).unwrap();
    std::fs::write(
        out.join(".well-known/openid-configuration"),
        json!({ "issuer": issuer, "jwks_uri": format!("{issuer}/jwks.json") }).to_string(),
    )
    .unwrap();
    std::fs::write(
        out.join("jwks.json"),
        json!({ "keys": [{ "kty": "OKP", "crv": "Ed25519", "kid": "bench",
                           "x": b64(key.public_key().as_ref()) }] })
        .to_string(),
    )
    .unwrap();
    let now = jiff::Timestamp::now().as_second();
    let header = json!({ "alg": "EdDSA", "typ": "at+jwt", "kid": "bench" });
    let claims = json!({ "iss": issuer, "aud": audience, "sub": "bench-user",
                         "scope": "tools:read tools:write", "iat": now, "exp": now + 3600 });
    let input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let signature = key.sign(input.as_bytes());
    println!("{input}.{}", b64(signature.as_ref()));
}
