//! Access tokens as compact JWS (RFC 7515, RFC 7519, the RFC 9068 profile): a token
//! split and decoded ([`decode`]), the signing keys of a JWK set parsed once
//! ([`parse_key_set`]), and a signature checked against one key ([`Jwk::verifies`]).
//!
//! Three algorithms only: RS256, ES256 and EdDSA (Ed25519). `none` and every HMAC
//! algorithm are refused at decoding, before any key is looked at, so a token "signed"
//! with a public key as an HMAC secret never reaches a verifier. A key verifies only
//! the algorithm of its own type, and a key set's RSA keys shorter than 2,048 bits,
//! encryption keys and unknown key types are left out.
//!
//! Errors ([`Invalid`]) name what failed, never the token or a claim's value.

use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED, ED25519, ParsedPublicKey, RSA_PKCS1_2048_8192_SHA256,
    RsaPublicKeyComponents,
};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Map, Value};

/// The signature algorithms the broker accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Alg {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    Rs256,
    /// ECDSA on P-256 with SHA-256.
    Es256,
    /// Ed25519.
    EdDsa,
}

impl Alg {
    /// The JOSE name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Rs256 => "RS256",
            Self::Es256 => "ES256",
            Self::EdDsa => "EdDSA",
        }
    }

    fn parse(name: &str) -> Option<Self> {
        match name {
            "RS256" => Some(Self::Rs256),
            "ES256" => Some(Self::Es256),
            "EdDSA" => Some(Self::EdDsa),
            _ => None,
        }
    }
}

/// Why a token was refused; each says what failed, never what the token holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Invalid {
    /// Not three base64url parts of JSON objects.
    Malformed,
    /// An algorithm other than RS256, ES256 and EdDSA (including `none` and HMAC).
    Algorithm,
    /// A `crit` header: extensions this broker does not understand.
    Critical,
    /// No published key has the token's `kid` (or, without one, its algorithm).
    UnknownKey,
    /// The signature does not verify.
    Signature,
    /// `iss` is not the configured issuer.
    Issuer,
    /// `aud` does not name the broker's resource.
    Audience,
    /// `exp` has passed.
    Expired,
    /// `nbf` is still ahead.
    NotYetValid,
    /// A claim the broker needs is absent or of the wrong type.
    Claim(&'static str),
    /// The header's `typ` is not an access token's (RFC 9068 `at+jwt`, or plain `JWT`
    /// where the deployment accepts it).
    TokenType,
    /// The token carries an ID token's claims (`nonce`, `at_hash`, `c_hash`).
    IdToken,
}

impl Invalid {
    /// What went wrong, for the caller (the `error_description` of the challenge).
    pub fn describe(self) -> String {
        match self {
            Self::Malformed => "the access token is not a well-formed JWT".into(),
            Self::Algorithm => {
                "the access token's algorithm is not accepted (RS256, ES256 or EdDSA only)".into()
            }
            Self::Critical => "the access token names critical header extensions".into(),
            Self::UnknownKey => {
                "the access token is signed by a key the authorization server does not publish"
                    .into()
            }
            Self::Signature => "the access token's signature does not verify".into(),
            Self::Issuer => "the access token is from another issuer".into(),
            Self::Audience => "the access token is not for this broker (its audience)".into(),
            Self::Expired => "the access token has expired".into(),
            Self::NotYetValid => "the access token is not valid yet".into(),
            Self::Claim(name) => format!("the access token has no valid `{name}` claim"),
            Self::TokenType => "the token is not an access token: its header `typ` must be `at+jwt` (RFC 9068)".into(),
            Self::IdToken => "the token is an ID token (it carries `nonce`, `at_hash` or `c_hash`): send an access token".into(),
        }
    }
}

/// A decoded token whose signature is not checked yet.
#[derive(Debug)]
pub struct Token<'a> {
    /// The header's algorithm.
    pub alg: Alg,
    /// The header's key id.
    pub kid: Option<String>,
    /// The header's `typ`, when it has one.
    pub typ: Option<String>,
    /// `header.payload`, the signed bytes.
    signing_input: &'a [u8],
    /// The decoded signature.
    signature: Vec<u8>,
    /// The payload's claims.
    pub claims: Map<String, Value>,
}

fn object(part: &str) -> Result<Map<String, Value>, Invalid> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|_| Invalid::Malformed)?;
    match serde_json::from_slice(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(Invalid::Malformed),
    }
}

/// Splits and decodes a compact JWS; refuses other algorithms and `crit` headers.
pub fn decode(token: &str) -> Result<Token<'_>, Invalid> {
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(Invalid::Malformed);
    };
    let head = object(header)?;
    let alg = head
        .get("alg")
        .and_then(Value::as_str)
        .and_then(Alg::parse)
        .ok_or(Invalid::Algorithm)?;
    if head.contains_key("crit") {
        return Err(Invalid::Critical);
    }
    let kid = match head.get("kid") {
        None => None,
        Some(Value::String(kid)) => Some(kid.clone()),
        Some(_) => return Err(Invalid::Malformed),
    };
    let typ = match head.get("typ") {
        None => None,
        Some(Value::String(typ)) => Some(typ.clone()),
        Some(_) => return Err(Invalid::Malformed),
    };
    let claims = object(payload)?;
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| Invalid::Malformed)?;
    let signed_len = header.len() + 1 + payload.len();
    Ok(Token {
        alg,
        kid,
        typ,
        signing_input: token
            .as_bytes()
            .get(..signed_len)
            .ok_or(Invalid::Malformed)?,
        signature,
        claims,
    })
}

/// Which header `typ` an access token may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessTokenTypes {
    /// RFC 9068 only: `at+jwt` or `application/at+jwt`.
    AtJwt,
    /// Also a plain `JWT` (or no `typ`), for providers that issue no other.
    AlsoPlainJwt,
}

impl Token<'_> {
    /// Whether the token is an access token and not an ID token: its `typ` one of
    /// `types` (compared as media types are, without case), and none of the claims
    /// only an ID token carries.
    pub fn check_access_token(&self, types: AccessTokenTypes) -> Result<(), Invalid> {
        // `application/at+jwt` is `at+jwt` (RFC 7515: the prefix may be left out).
        let typ = self.typ.as_deref().map(|t| {
            let t = t.trim();
            match (t.get(..12), t.get(12..)) {
                (Some(prefix), Some(rest)) if prefix.eq_ignore_ascii_case("application/") => rest,
                _ => t,
            }
        });
        let rfc_9068 = typ.is_some_and(|t| t.eq_ignore_ascii_case("at+jwt"));
        let plain = typ.is_none_or(|t| t.eq_ignore_ascii_case("jwt"));
        let accepted = rfc_9068 || (types == AccessTokenTypes::AlsoPlainJwt && plain);
        if !accepted {
            return Err(Invalid::TokenType);
        }
        if ["nonce", "at_hash", "c_hash"]
            .iter()
            .any(|claim| self.claims.contains_key(*claim))
        {
            return Err(Invalid::IdToken);
        }
        Ok(())
    }
}

/// One signing key of the issuer's key set, parsed once.
pub struct Jwk {
    /// The key's id (`kid`).
    pub kid: Option<String>,
    /// The one algorithm it verifies.
    pub alg: Alg,
    key: ParsedPublicKey,
}

impl std::fmt::Debug for Jwk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Jwk")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

impl Jwk {
    /// Whether this key verifies the token: its algorithm, then its signature.
    pub fn verifies(&self, token: &Token<'_>) -> bool {
        self.alg == token.alg
            && self
                .key
                .verify_sig(token.signing_input, &token.signature)
                .is_ok()
    }

    /// Whether this key may have signed the token, by `kid` and algorithm.
    pub fn matches(&self, token: &Token<'_>) -> bool {
        self.alg == token.alg
            && match (&token.kid, &self.kid) {
                (Some(wanted), Some(kid)) => wanted == kid,
                (Some(_), None) => false,
                (None, _) => true,
            }
    }
}

fn bytes(key: &Map<String, Value>, name: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD
        .decode(key.get(name)?.as_str()?.trim_end_matches('='))
        .ok()
}

/// One JWK as a verifying key, or `None` when it is not a signing key of an accepted
/// type (an encryption key, another curve, a short RSA key, a malformed member).
fn parse_key(key: &Map<String, Value>) -> Option<Jwk> {
    if key.get("use").is_some_and(|u| u != "sig") {
        return None;
    }
    let kty = key.get("kty")?.as_str()?;
    let alg = match (kty, key.get("crv").and_then(Value::as_str)) {
        ("RSA", _) => Alg::Rs256,
        ("EC", Some("P-256")) => Alg::Es256,
        ("OKP", Some("Ed25519")) => Alg::EdDsa,
        _ => return None,
    };
    // A key that names an algorithm verifies only that one.
    if let Some(named) = key.get("alg")
        && named.as_str() != Some(alg.as_str())
    {
        return None;
    }
    let parsed = match alg {
        Alg::Rs256 => {
            // Big-endian without leading zeros (some key sets pad the modulus).
            let unsigned = |v: Vec<u8>| -> Option<Vec<u8>> {
                Some(v.get(v.iter().position(|b| *b != 0)?..)?.to_vec())
            };
            let n = unsigned(bytes(key, "n")?)?;
            let e = unsigned(bytes(key, "e")?)?;
            if n.len() < 256 {
                return None;
            }
            RsaPublicKeyComponents { n: &n, e: &e }
                .to_parsed_public_key(&RSA_PKCS1_2048_8192_SHA256)
                .ok()?
        }
        Alg::Es256 => {
            let (x, y) = (bytes(key, "x")?, bytes(key, "y")?);
            if x.len() != 32 || y.len() != 32 {
                return None;
            }
            let mut point = Vec::with_capacity(65);
            point.push(4);
            point.extend_from_slice(&x);
            point.extend_from_slice(&y);
            ParsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point).ok()?
        }
        Alg::EdDsa => {
            let x = bytes(key, "x")?;
            if x.len() != 32 {
                return None;
            }
            ParsedPublicKey::new(&ED25519, x).ok()?
        }
    };
    Some(Jwk {
        kid: key.get("kid").and_then(Value::as_str).map(String::from),
        alg,
        key: parsed,
    })
}

/// The signing keys of a JWK set document (`{"keys": [...]}`); keys the broker cannot
/// use are left out. An error when the document is not a key set.
pub fn parse_key_set(document: &Value) -> Result<Vec<Jwk>, String> {
    let keys = document
        .get("keys")
        .and_then(Value::as_array)
        .ok_or("the key set document has no `keys` array")?;
    Ok(keys
        .iter()
        .filter_map(Value::as_object)
        .filter_map(parse_key)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(v: &Value) -> String {
        URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).unwrap())
    }

    #[test]
    fn none_and_hmac_are_refused_before_any_key() {
        for alg in ["none", "HS256", "HS512", "RS384", "PS256", ""] {
            let token = format!(
                "{}.{}.",
                part(&serde_json::json!({ "alg": alg })),
                part(&serde_json::json!({ "sub": "a" }))
            );
            assert_eq!(decode(&token).unwrap_err(), Invalid::Algorithm, "{alg}");
        }
        let token = format!(
            "{}.{}.c2ln",
            part(&serde_json::json!({ "alg": "ES256", "crit": ["exp"] })),
            part(&serde_json::json!({}))
        );
        assert_eq!(decode(&token).unwrap_err(), Invalid::Critical);
    }

    #[test]
    fn malformed_tokens_say_so() {
        for token in [
            "",
            "a.b",
            "a.b.c.d",
            "!!.e30.",
            "e30.e30.!!",
            "W10.e30.",
            "e30.W10.",
        ] {
            assert!(decode(token).is_err(), "{token}");
        }
    }

    #[test]
    fn a_key_set_keeps_only_signing_keys_it_can_use() {
        let x = URL_SAFE_NO_PAD.encode([7u8; 32]);
        let set = serde_json::json!({ "keys": [
            { "kty": "OKP", "crv": "Ed25519", "x": x, "kid": "ed" },
            { "kty": "OKP", "crv": "Ed25519", "x": x, "use": "enc" },
            { "kty": "OKP", "crv": "X25519", "x": x },
            { "kty": "oct", "k": x },
            { "kty": "RSA", "n": URL_SAFE_NO_PAD.encode([1u8; 128]), "e": "AQAB" },
            { "kty": "OKP", "crv": "Ed25519", "x": x, "alg": "ES256" },
        ]});
        let keys = parse_key_set(&set).unwrap();
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("ed"));
        assert!(parse_key_set(&serde_json::json!({})).is_err());
    }
}
