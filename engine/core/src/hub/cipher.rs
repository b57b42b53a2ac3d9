//! The vault's keys ([`VaultCipher`]): what seals the upstream keys users store, and the
//! hub's own short statements (sessions, forms, connect links, MCP request states).
//!
//! Each deployment secret (`vault_key_env`, then `vault_previous_key_envs`, at least 32
//! characters) gives, by HKDF-SHA256, three independent values: an AES-256-GCM key for
//! stored keys, another for statements, and a public key id (16 hex digits) recorded
//! with each row, so `vault rekey` finds the rows another key sealed. The first secret
//! seals; every one opens. Every seal takes a fresh random 96-bit nonce; the stored form
//! is base64url of nonce, ciphertext and tag.

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use aws_lc_rs::hkdf;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::Value;
use zeroize::Zeroizing;

/// The least length of a vault secret.
pub const MIN_SECRET_CHARS: usize = 32;
const SALT: &[u8] = b"tool-broker vault";
const ROWS_INFO: &[u8] = b"tool-broker vault rows v1";
const STATEMENTS_INFO: &[u8] = b"tool-broker hub statements v1";
const KEY_ID_INFO: &[u8] = b"tool-broker vault key id v1";

/// An HKDF output length.
struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

struct Derived {
    id: String,
    rows: LessSafeKey,
    statements: LessSafeKey,
}

fn aead_key(prk: &hkdf::Prk, info: &[u8]) -> Result<LessSafeKey, String> {
    // The derived bytes are wiped once aws-lc holds the key.
    let mut bytes = Zeroizing::new([0u8; 32]);
    prk.expand(&[info], Len(32))
        .and_then(|okm| okm.fill(bytes.as_mut_slice()))
        .map_err(|_| "the vault key could not be derived")?;
    let unbound =
        UnboundKey::new(&AES_256_GCM, bytes.as_slice()).map_err(|_| "the vault key is unusable")?;
    Ok(LessSafeKey::new(unbound))
}

fn derive(secret: &str) -> Result<Derived, String> {
    if secret.chars().count() < MIN_SECRET_CHARS {
        return Err(format!(
            "the vault key must be at least {MIN_SECRET_CHARS} characters (a random one: `openssl rand -base64 48`)"
        ));
    }
    let prk = hkdf::Salt::new(hkdf::HKDF_SHA256, SALT).extract(secret.as_bytes());
    let mut id = [0u8; 8];
    prk.expand(&[KEY_ID_INFO], Len(8))
        .and_then(|okm| okm.fill(&mut id))
        .map_err(|_| "the vault key id could not be derived")?;
    Ok(Derived {
        id: crate::catalog::identity::hex(&id),
        rows: aead_key(&prk, ROWS_INFO)?,
        statements: aead_key(&prk, STATEMENTS_INFO)?,
    })
}

/// The deployment's vault keys: the current one first.
pub struct VaultCipher(Vec<Derived>);

impl std::fmt::Debug for VaultCipher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VaultCipher")
            .field("key_ids", &self.0.iter().map(|d| &d.id).collect::<Vec<_>>())
            .finish()
    }
}

fn seal_with(key: &LessSafeKey, ad: &[u8], plain: &[u8]) -> Option<String> {
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).ok()?;
    // Sealed in place, with room for the tag so the plain text is never left behind in
    // a buffer given up on growing; wiped on drop if sealing fails.
    let mut buf = Zeroizing::new(Vec::with_capacity(plain.len() + AES_256_GCM.tag_len()));
    buf.extend_from_slice(plain);
    key.seal_in_place_append_tag(
        Nonce::assume_unique_for_key(nonce),
        Aad::from(ad),
        &mut *buf,
    )
    .ok()?;
    let mut out = nonce.to_vec();
    out.extend_from_slice(buf.as_slice());
    Some(B64.encode(out))
}

/// Opens a sealed text; the buffer it is opened in, and the text given, are wiped on
/// drop.
fn open_with(key: &LessSafeKey, ad: &[u8], sealed: &[u8]) -> Option<Zeroizing<Vec<u8>>> {
    let (nonce, rest) = sealed.split_at_checked(NONCE_LEN)?;
    let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
    let mut buf = Zeroizing::new(rest.to_vec());
    let len = key
        .open_in_place(nonce, Aad::from(ad), buf.as_mut_slice())
        .ok()?
        .len();
    buf.truncate(len);
    Some(buf)
}

/// The associated data of a stored key: issuer, subject and service, as a JSON array
/// (unambiguous whatever the strings hold).
pub fn row_binding(issuer: &str, subject: &str, service: &str) -> Vec<u8> {
    serde_json::to_vec(&["hub-key/v1", issuer, subject, service]).unwrap_or_default()
}

impl VaultCipher {
    /// From the current secret and the earlier ones still to be opened.
    pub fn new(secret: &str, previous: &[Zeroizing<String>]) -> Result<Self, String> {
        let mut keys = vec![derive(secret)?];
        for (i, old) in previous.iter().enumerate() {
            keys.push(derive(old).map_err(|e| format!("vault_previous_key_envs[{i}]: {e}"))?);
        }
        Ok(Self(keys))
    }

    /// The id of the key that seals now.
    pub fn current_id(&self) -> &str {
        self.0.first().map_or("", |d| d.id.as_str())
    }

    /// Seals a stored key bound to `binding` ([`row_binding`]); `None` only without an
    /// entropy source.
    pub fn seal_row(&self, binding: &[u8], plain: &str) -> Option<String> {
        seal_with(&self.0.first()?.rows, binding, plain.as_bytes())
    }

    /// Opens a stored key sealed for `binding` under any of the keys, the one that
    /// opened it first; `None` when no key opens it (altered, moved to another user or
    /// service, or sealed under a key this deployment no longer has).
    pub fn open_row(
        &self,
        binding: &[u8],
        sealed: &str,
    ) -> Option<(zeroize::Zeroizing<String>, &str)> {
        let bytes = B64.decode(sealed.as_bytes()).ok()?;
        self.0.iter().find_map(|d| {
            let plain = open_with(&d.rows, binding, &bytes)?;
            let text = std::str::from_utf8(plain.as_slice()).ok()?;
            Some((Zeroizing::new(text.to_string()), d.id.as_str()))
        })
    }

    /// Seals a statement of `purpose` (its claims as JSON); a statement of one purpose
    /// never opens as another.
    pub fn seal_statement(&self, purpose: &str, claims: &Value) -> Option<String> {
        let text = serde_json::to_vec(claims).ok()?;
        seal_with(&self.0.first()?.statements, purpose.as_bytes(), &text)
    }

    /// Opens a statement of `purpose` whose `exp` (Unix ms) is after `now_ms`.
    pub fn open_statement(&self, purpose: &str, sealed: &str, now_ms: i64) -> Option<Value> {
        let bytes = B64.decode(sealed.as_bytes()).ok()?;
        let claims: Value = self.0.iter().find_map(|d| {
            let plain = open_with(&d.statements, purpose.as_bytes(), &bytes)?;
            serde_json::from_slice(&plain).ok()
        })?;
        let exp = claims.get("exp").and_then(Value::as_i64)?;
        (exp > now_ms).then_some(claims)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "a-vault-secret-of-at-least-32-characters";
    const B: &str = "another-vault-secret-of-32-or-more-chars";

    #[test]
    fn a_row_opens_only_for_its_user_and_service_and_under_its_keys() {
        let vault = VaultCipher::new(A, &[]).unwrap();
        let alice = row_binding("https://idp", "alice", "payments");
        let sealed = vault.seal_row(&alice, "sk_live_canary").unwrap();
        assert!(!sealed.contains("canary"));
        let (plain, id) = vault.open_row(&alice, &sealed).unwrap();
        assert_eq!((plain.as_str(), id), ("sk_live_canary", vault.current_id()));
        // Another user, another service, another issuer: nothing opens.
        for other in [
            row_binding("https://idp", "bob", "payments"),
            row_binding("https://idp", "alice", "crm"),
            row_binding("https://other", "alice", "payments"),
        ] {
            assert!(vault.open_row(&other, &sealed).is_none());
        }
        // Two seals of one key differ (a fresh nonce each).
        assert_ne!(
            vault.seal_row(&alice, "k").unwrap(),
            vault.seal_row(&alice, "k").unwrap()
        );
        // Rotation: the new key opens old rows while the old one is listed.
        let rotated = VaultCipher::new(B, &[Zeroizing::new(A.to_string())]).unwrap();
        let (plain, id) = rotated.open_row(&alice, &sealed).unwrap();
        assert_eq!(plain.as_str(), "sk_live_canary");
        assert_eq!(id, vault.current_id());
        assert_ne!(rotated.current_id(), vault.current_id());
        assert!(
            VaultCipher::new(B, &[])
                .unwrap()
                .open_row(&alice, &sealed)
                .is_none()
        );
    }

    #[test]
    fn statements_keep_to_their_purpose_and_expire() {
        let vault = VaultCipher::new(A, &[]).unwrap();
        let claims = serde_json::json!({ "sub": "alice", "exp": 2_000 });
        let sealed = vault.seal_statement("hub-session", &claims).unwrap();
        assert_eq!(
            vault.open_statement("hub-session", &sealed, 1_000),
            Some(claims)
        );
        assert!(
            vault
                .open_statement("hub-connect", &sealed, 1_000)
                .is_none()
        );
        assert!(
            vault
                .open_statement("hub-session", &sealed, 2_000)
                .is_none()
        );
        // A stored-key seal is no statement, and the other way round.
        let row = vault.seal_row(b"hub-session", "{\"exp\":9999}").unwrap();
        assert!(vault.open_statement("hub-session", &row, 1_000).is_none());
    }

    #[test]
    fn a_short_secret_is_refused_with_how_to_make_one() {
        let e = VaultCipher::new("short", &[]).unwrap_err();
        assert!(e.contains("at least 32 characters"), "{e}");
        let e = VaultCipher::new(A, &[Zeroizing::new("short".into())]).unwrap_err();
        assert!(e.contains("vault_previous_key_envs[0]"), "{e}");
    }
}
