//! A loopback OpenID provider for the OAuth tests: a wiremock server publishing an
//! OpenID discovery document and a JWK set, and access tokens signed here with keys
//! made here (RS256, ES256, EdDSA), as an authorization server would mint them.

use std::sync::OnceLock;

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RSA_PKCS1_SHA256,
    RsaKeyPair, RsaPublicKeyComponents,
};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

/// The resource every test broker names in `[oauth] resource`.
pub const RESOURCE: &str = "http://127.0.0.1/mcp";

/// The signing keys of one test binary, made once (an RSA key takes a moment).
pub struct Keys {
    rsa: RsaKeyPair,
    /// A second RSA key: rotated in, or never published.
    rsa2: RsaKeyPair,
    ec: EcdsaKeyPair,
    ed: Ed25519KeyPair,
}

/// The keys, made on first use.
pub fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| Keys {
        rsa: RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap(),
        rsa2: RsaKeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap(),
        ec: EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).unwrap(),
        ed: Ed25519KeyPair::generate().unwrap(),
    })
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Which key signs a token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signer {
    /// RS256 with the published RSA key (`kid` "rsa-1").
    Rsa,
    /// RS256 with the second RSA key (`kid` "rsa-2").
    Rsa2,
    /// ES256 (`kid` "ec-1").
    Ec,
    /// EdDSA (`kid` "ed-1").
    Ed,
}

impl Signer {
    fn alg(self) -> &'static str {
        match self {
            Self::Rsa | Self::Rsa2 => "RS256",
            Self::Ec => "ES256",
            Self::Ed => "EdDSA",
        }
    }

    /// The key id the JWK set publishes it under.
    pub fn kid(self) -> &'static str {
        match self {
            Self::Rsa => "rsa-1",
            Self::Rsa2 => "rsa-2",
            Self::Ec => "ec-1",
            Self::Ed => "ed-1",
        }
    }

    /// The public key as a JWK.
    pub fn jwk(self) -> Value {
        let k = keys();
        match self {
            Self::Rsa | Self::Rsa2 => {
                let pair = if self == Self::Rsa { &k.rsa } else { &k.rsa2 };
                let c = RsaPublicKeyComponents::<Vec<u8>>::from(pair.public_key());
                json!({ "kty": "RSA", "kid": self.kid(), "use": "sig", "alg": "RS256",
                        "n": b64(&c.n), "e": b64(&c.e) })
            }
            Self::Ec => {
                let point = k.ec.public_key().as_ref().to_vec();
                json!({ "kty": "EC", "crv": "P-256", "kid": self.kid(), "use": "sig",
                        "x": b64(&point[1..33]), "y": b64(&point[33..65]) })
            }
            Self::Ed => json!({ "kty": "OKP", "crv": "Ed25519", "kid": self.kid(),
                                "x": b64(k.ed.public_key().as_ref()) }),
        }
    }

    fn sign(self, message: &[u8]) -> Vec<u8> {
        let k = keys();
        let rng = SystemRandom::new();
        match self {
            Self::Rsa | Self::Rsa2 => {
                let pair = if self == Self::Rsa { &k.rsa } else { &k.rsa2 };
                let mut sig = vec![0; pair.public_modulus_len()];
                pair.sign(&RSA_PKCS1_SHA256, &rng, message, &mut sig)
                    .unwrap();
                sig
            }
            Self::Ec => k.ec.sign(&rng, message).unwrap().as_ref().to_vec(),
            Self::Ed => k.ed.sign(message).as_ref().to_vec(),
        }
    }
}

/// A compact JWS of `header` and `claims` signed by `signer`.
pub fn signed(signer: Signer, header: Value, claims: &Value) -> String {
    let input = format!(
        "{}.{}",
        b64(&serde_json::to_vec(&header).unwrap()),
        b64(&serde_json::to_vec(claims).unwrap())
    );
    let sig = signer.sign(input.as_bytes());
    format!("{input}.{}", b64(&sig))
}

/// A token with arbitrary header and claims and a given signature part (for forged ones).
pub fn unsigned(header: &Value, claims: &Value, signature: &[u8]) -> String {
    format!(
        "{}.{}.{}",
        b64(&serde_json::to_vec(header).unwrap()),
        b64(&serde_json::to_vec(claims).unwrap()),
        b64(signature)
    )
}

/// The provider: its server, issuer and what it publishes.
pub struct Idp {
    /// The wiremock server.
    pub server: MockServer,
    /// `http://127.0.0.1:port`.
    pub issuer: String,
}

impl Idp {
    /// A provider publishing the RSA, EC and Ed25519 keys (not `rsa-2`).
    pub async fn start() -> Self {
        let server = MockServer::start().await;
        let issuer = server.uri();
        let idp = Self { server, issuer };
        idp.publish(&[Signer::Rsa, Signer::Ec, Signer::Ed]).await;
        idp
    }

    /// Publishes exactly these keys (the discovery document stays).
    pub async fn publish(&self, signers: &[Signer]) {
        self.server.reset().await;
        Mock::given(method("GET"))
            .and(path("/.well-known/openid-configuration"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({
                "issuer": self.issuer,
                "jwks_uri": format!("{}/jwks", self.issuer),
                "authorization_endpoint": format!("{}/authorize", self.issuer),
                "token_endpoint": format!("{}/token", self.issuer),
                "response_types_supported": ["code"],
            })))
            .mount(&self.server)
            .await;
        let keys: Vec<Value> = signers.iter().map(|s| s.jwk()).collect();
        Mock::given(method("GET"))
            .and(path("/jwks"))
            .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "keys": keys })))
            .mount(&self.server)
            .await;
    }

    /// How many times the key set was fetched since the last [`Idp::publish`].
    pub async fn key_fetches(&self) -> usize {
        self.server
            .received_requests()
            .await
            .unwrap_or_default()
            .iter()
            .filter(|r| r.url.path() == "/jwks")
            .count()
    }

    /// Claims of a valid token for `subject` with `scope`, for five minutes.
    pub fn claims(&self, subject: &str, scope: &str) -> Value {
        let now = jiff::Timestamp::now().as_second();
        json!({
            "iss": self.issuer,
            "aud": [RESOURCE, "other-api"],
            "sub": subject,
            "scope": scope,
            "iat": now,
            "nbf": now - 5,
            "exp": now + 300,
            "client_id": "test-client",
        })
    }

    /// A valid token for `subject` with `scope`, signed RS256 by the published key.
    pub fn token(&self, subject: &str, scope: &str) -> String {
        self.token_by(Signer::Rsa, &self.claims(subject, scope))
    }

    /// `claims` signed by `signer`, with its `kid`.
    pub fn token_by(&self, signer: Signer, claims: &Value) -> String {
        signed(
            signer,
            json!({ "alg": signer.alg(), "typ": "at+jwt", "kid": signer.kid() }),
            claims,
        )
    }

    /// The `[oauth]` table naming this provider, with extra lines.
    pub fn config(&self, extra: &str) -> String {
        format!(
            "[oauth]\nissuer = \"{}\"\nresource = \"{RESOURCE}\"\n{extra}\n",
            self.issuer
        )
    }
}
