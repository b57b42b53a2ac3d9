//! Sealed statements the broker hands out and takes back (confirmation tokens; later
//! MCP `requestState` and approval ids): claims in base64url JSON, sealed with
//! HMAC-SHA256 under a broker-held key.
//!
//! The keys live in the store ([`crate::store::confirmation`]), so every replica opens
//! what any replica sealed. A key seals for a day; then a new one is added and the old
//! ones stay, so a rotation never loses a token in flight and needs no restart. A
//! replica that meets an unknown key id reloads the ring once (another replica rotated).
//! The form is `<kid>.<claims>.<mac>`; the MAC covers a purpose word, the key id and
//! the claims, so a token of one purpose never opens as another.

use std::sync::RwLock;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use serde_json::Value;

use crate::store::{Store, StoreError};

/// How long a key seals before a new one is added.
pub const ROTATE_MS: i64 = 24 * 3600 * 1000;

struct Key {
    kid: String,
    key: aws_lc_rs::hmac::Key,
    created_ms: i64,
}

/// The key ring, cached from the store.
#[derive(Default)]
pub struct Sealer {
    keys: RwLock<Vec<Key>>,
}

/// Why a sealed text did not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsealed {
    /// Not of the form, not base64, not JSON.
    Malformed,
    /// Sealed under no key this deployment has, or altered.
    Tampered,
}

/// Why sealing or opening could not be done: the store.
pub type StoreFailure = StoreError;

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer")
    }
}

fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    // getrandom only fails on platforms without an entropy source, where nothing
    // sealed could be trusted anyway; a zero key is never used (checked below).
    let _ = getrandom::fill(&mut buf);
    buf
}

impl Sealer {
    async fn reload(&self, store: &Store) -> Result<(), StoreError> {
        let rows = store.seal_keys().await?;
        let keys = rows
            .into_iter()
            .filter_map(|(kid, secret, created_ms)| {
                let bytes = zeroize::Zeroizing::new(B64.decode(secret.as_bytes()).ok()?);
                Some(Key {
                    kid,
                    key: aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, &bytes),
                    created_ms,
                })
            })
            .collect();
        if let Ok(mut slot) = self.keys.write() {
            *slot = keys;
        }
        Ok(())
    }

    fn newest(&self, now_ms: i64) -> Option<(String, aws_lc_rs::hmac::Key)> {
        let keys = self.keys.read().ok()?;
        keys.iter()
            .max_by_key(|k| k.created_ms)
            .filter(|k| now_ms - k.created_ms < ROTATE_MS)
            .map(|k| (k.kid.clone(), k.key.clone()))
    }

    fn find(&self, kid: &str) -> Option<aws_lc_rs::hmac::Key> {
        let keys = self.keys.read().ok()?;
        keys.iter().find(|k| k.kid == kid).map(|k| k.key.clone())
    }

    /// The key to seal with: the newest under a day old, else a new one (stored first,
    /// so another replica can open what this one seals).
    async fn sealing_key(
        &self,
        store: &Store,
        now_ms: i64,
    ) -> Result<(String, aws_lc_rs::hmac::Key), StoreError> {
        if let Some(key) = self.newest(now_ms) {
            return Ok(key);
        }
        self.reload(store).await?;
        if let Some(key) = self.newest(now_ms) {
            return Ok(key);
        }
        let secret = zeroize::Zeroizing::new(random_bytes::<32>());
        let kid: String = random_bytes::<6>()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if *secret == [0u8; 32] {
            return Err(StoreError::Query {
                kind: store.kind(),
                action: "make a sealing key",
                reason: "no entropy source".into(),
            });
        }
        store
            .add_seal_key(&kid, &B64.encode(secret.as_slice()), now_ms)
            .await?;
        self.reload(store).await?;
        self.newest(now_ms).ok_or(StoreError::Query {
            kind: store.kind(),
            action: "make a sealing key",
            reason: "the new key was not read back".into(),
        })
    }

    /// Seals `claims` for `purpose`.
    pub async fn seal(
        &self,
        store: &Store,
        now_ms: i64,
        purpose: &str,
        claims: &Value,
    ) -> Result<String, StoreError> {
        let (kid, key) = self.sealing_key(store, now_ms).await?;
        let body = B64.encode(claims.to_string());
        let tag = aws_lc_rs::hmac::sign(&key, format!("{purpose}.{kid}.{body}").as_bytes());
        Ok(format!("{kid}.{body}.{}", B64.encode(tag.as_ref())))
    }

    /// Opens what [`Sealer::seal`] sealed for `purpose`: the claims, or why not. The
    /// MAC is checked in constant time before the claims are read.
    pub async fn open(
        &self,
        store: &Store,
        purpose: &str,
        sealed: &str,
    ) -> Result<Result<Value, Unsealed>, StoreError> {
        let mut parts = sealed.trim().split('.');
        let (Some(kid), Some(body), Some(mac), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Ok(Err(Unsealed::Malformed));
        };
        let Ok(mac) = B64.decode(mac.as_bytes()) else {
            return Ok(Err(Unsealed::Malformed));
        };
        let key = match self.find(kid) {
            Some(key) => key,
            None => {
                self.reload(store).await?;
                match self.find(kid) {
                    Some(key) => key,
                    None => return Ok(Err(Unsealed::Tampered)),
                }
            }
        };
        if aws_lc_rs::hmac::verify(&key, format!("{purpose}.{kid}.{body}").as_bytes(), &mac)
            .is_err()
        {
            return Ok(Err(Unsealed::Tampered));
        }
        let claims = B64
            .decode(body.as_bytes())
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        Ok(claims.ok_or(Unsealed::Malformed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::StoreConfig;
    use serde_json::json;

    const DAY: i64 = 24 * 3600 * 1000;

    fn kid(sealed: &str) -> &str {
        sealed.split('.').next().unwrap_or("")
    }

    #[tokio::test]
    async fn sealed_claims_open_once_for_their_purpose_and_survive_a_rotation() {
        let store = Store::open(&StoreConfig::Memory).await.unwrap();
        let sealer = Sealer::default();
        let claims = json!({ "id": "t1", "tool": "payments.post_customers" });
        let t0 = 1_800_000_000_000;
        let first = sealer.seal(&store, t0, "confirm", &claims).await.unwrap();
        assert_eq!(
            sealer.open(&store, "confirm", &first).await.unwrap(),
            Ok(claims.clone())
        );
        // Another purpose never opens it.
        assert_eq!(
            sealer.open(&store, "session", &first).await.unwrap(),
            Err(Unsealed::Tampered)
        );
        // Altered claims or MAC, or another shape.
        let mut parts: Vec<String> = first.split('.').map(str::to_string).collect();
        let forged =
            B64.encode(json!({ "id": "t1", "tool": "payments.delete_customers" }).to_string());
        let altered = format!("{}.{forged}.{}", parts[0], parts[2]);
        assert_eq!(
            sealer.open(&store, "confirm", &altered).await.unwrap(),
            Err(Unsealed::Tampered)
        );
        parts[2] = B64.encode([0u8; 32]);
        assert_eq!(
            sealer
                .open(&store, "confirm", &parts.join("."))
                .await
                .unwrap(),
            Err(Unsealed::Tampered)
        );
        for bad in ["", "a.b", "a.b.c.d", "x.!!.y"] {
            assert_eq!(
                sealer.open(&store, "confirm", bad).await.unwrap(),
                Err(Unsealed::Malformed),
                "{bad}"
            );
        }
        // Within a day the same key seals; after, a new one, and the old token still opens.
        let same = sealer
            .seal(&store, t0 + DAY - 1, "confirm", &claims)
            .await
            .unwrap();
        assert_eq!(kid(&same), kid(&first));
        let rotated = sealer
            .seal(&store, t0 + DAY, "confirm", &claims)
            .await
            .unwrap();
        assert_ne!(kid(&rotated), kid(&first));
        assert_eq!(
            sealer.open(&store, "confirm", &first).await.unwrap(),
            Ok(claims.clone())
        );
        // Another replica (its own cache, the same store) opens both and seals with the newest.
        let replica = Sealer::default();
        assert_eq!(
            replica.open(&store, "confirm", &first).await.unwrap(),
            Ok(claims.clone())
        );
        let by_replica = replica
            .seal(&store, t0 + DAY + 1, "confirm", &claims)
            .await
            .unwrap();
        assert_eq!(kid(&by_replica), kid(&rotated));
        // A deployment with other keys opens nothing of this one's.
        let elsewhere = Store::open(&StoreConfig::Memory).await.unwrap();
        assert_eq!(
            Sealer::default()
                .open(&elsewhere, "confirm", &first)
                .await
                .unwrap(),
            Err(Unsealed::Tampered)
        );
    }
}
