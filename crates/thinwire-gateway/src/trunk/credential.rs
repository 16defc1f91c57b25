//! Trunk credentials: what admits an edge (or tcm-local) to a server gateway's trunk.
//!
//! A server gateway's public key is not a secret, so it cannot be what admits a trunk. The
//! operator holds a 32-byte **operator key** (a [`TokenKey`]), known to the server gateway and
//! to whoever mints credentials, and gives each edge its own long-lived **trunk credential**:
//! a thinwire connect token minted with that key for the server gateway's trunk key, whose
//! sealed claims say the edge's peer id (`client_id`) and name (`user_data`). The server
//! gateway's trunk endpoint requires connect tokens, so the core refuses a Connect without a
//! valid credential at the handshake, before anything is allocated; after the handshake the
//! gateway admits the trunk only if the id is among its allowed peers
//! ([`ServerGatewayConfig::peers`](super::ServerGatewayConfig::peers)).
//!
//! The credential also carries the edge's copy of its id and name in clear (the edge cannot
//! read the sealed claims); only the sealed ones count at the server gateway.
//!
//! Text form (a valid TOML table, one `key = value` a line; [`TrunkCredential::to_text`],
//! [`TrunkCredential::from_text`]):
//! ```text
//! peer = 3
//! name = "edge-eu"
//! # the encoded connect token, hex
//! token = "5457..."
//! ```

use std::net::SocketAddr;

use thinwire_proto::{ConnectToken, PublicKey, TokenClaims, TokenError, TokenKey};
use thiserror::Error;

/// Longest peer name (bytes): it travels as the token's user data.
pub const MAX_PEER_NAME: usize = 64;

/// An edge's (or tcm-local's) credential for one server gateway's trunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrunkCredential {
    /// The peer id sealed in the token (the edge's copy, for its logs).
    pub peer: u64,
    /// The peer name sealed in the token (the edge's copy).
    pub name: String,
    /// The connect token: the server gateway's key and address, and the sealed claims.
    pub token: ConnectToken,
}

/// Why a credential could not be minted or read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum CredentialError {
    /// The name is longer than [`MAX_PEER_NAME`] bytes (the caller's).
    #[error("peer name longer than {MAX_PEER_NAME} bytes")]
    NameTooLong,
    /// The token could not be minted or decoded.
    #[error("connect token: {0}")]
    Token(#[from] TokenError),
    /// The text is not a credential (a missing or malformed line).
    #[error("not a trunk credential: {0}")]
    Malformed(&'static str),
}

/// What a trunk credential says: whose it is, for which server gateway, until when.
#[derive(Debug, Clone, Copy)]
pub struct CredentialSpec<'a> {
    /// The peer id the server gateway admits (listed in its allowed peers).
    pub peer_id: u64,
    /// The peer's name, at most [`MAX_PEER_NAME`] bytes.
    pub name: &'a str,
    /// The server gateway's trunk key.
    pub server_gateway_key: &'a PublicKey,
    /// The server gateway's trunk addresses (1 to 8; the edge dials the first).
    pub addresses: &'a [SocketAddr],
    /// Unix time (seconds) from which the credential is refused: e.g. a year ahead; mint a
    /// new one before.
    pub expires_unix_s: u64,
}

/// Mints a trunk credential with the operator key. `nonce`: 24 fresh bytes from a
/// cryptographic RNG, never reused with the same key.
pub fn mint_trunk_credential(
    operator_key: &TokenKey,
    spec: &CredentialSpec<'_>,
    nonce: [u8; 24],
) -> Result<TrunkCredential, CredentialError> {
    if spec.name.len() > MAX_PEER_NAME {
        return Err(CredentialError::NameTooLong);
    }
    let claims = TokenClaims {
        client_id: spec.peer_id,
        user_data: spec.name.as_bytes().to_vec(),
    };
    let key = spec.server_gateway_key.0;
    let token = ConnectToken::mint(
        operator_key,
        &claims,
        key,
        spec.addresses,
        spec.expires_unix_s,
        nonce,
    )?;
    Ok(TrunkCredential {
        peer: spec.peer_id,
        name: spec.name.to_string(),
        token,
    })
}

impl TrunkCredential {
    /// The server gateway's trunk key the credential was minted for.
    pub fn server_gateway_key(&self) -> PublicKey {
        PublicKey(self.token.server_key())
    }

    /// The address the edge dials (the token's first).
    pub fn server_gateway(&self) -> Option<SocketAddr> {
        self.token.addresses().first().copied()
    }

    /// The text form (see the module doc).
    pub fn to_text(&self) -> String {
        let hex: String = self
            .token
            .encode()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let name: String = self.name.escape_default().collect();
        format!(
            "peer = {}\nname = \"{name}\"\ntoken = \"{hex}\"\n",
            self.peer
        )
    }

    /// Reads the text form back (lines in any order; blank lines and lines starting with `#`
    /// ignored).
    pub fn from_text(text: &str) -> Result<Self, CredentialError> {
        let (mut peer, mut name, mut token) = (None, None, None);
        for line in text.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let (k, v) = line
                .split_once('=')
                .ok_or(CredentialError::Malformed("a line without '='"))?;
            let v = v.trim();
            let quoted = || {
                v.strip_prefix('"')
                    .and_then(|v| v.strip_suffix('"'))
                    .ok_or(CredentialError::Malformed("a value without quotes"))
            };
            match k.trim() {
                "peer" => peer = v.parse::<u64>().ok(),
                "name" => name = Some(unescape(quoted()?)?),
                "token" => token = Some(ConnectToken::decode(&unhex(quoted()?)?)?),
                _ => return Err(CredentialError::Malformed("an unknown key")),
            }
        }
        Ok(Self {
            peer: peer.ok_or(CredentialError::Malformed("no peer id"))?,
            name: name.ok_or(CredentialError::Malformed("no name"))?,
            token: token.ok_or(CredentialError::Malformed("no token"))?,
        })
    }
}

fn unhex(s: &str) -> Result<Vec<u8>, CredentialError> {
    let bad = CredentialError::Malformed("the token is not hex");
    if s.len() % 2 != 0 || !s.is_ascii() || s.len() > 2048 {
        return Err(bad);
    }
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).map_err(|_| bad.clone()))
        .collect()
}

/// Undoes `escape_default` for what a name can hold (quotes, backslashes, `\u{..}`).
fn unescape(s: &str) -> Result<String, CredentialError> {
    let bad = CredentialError::Malformed("a bad escape in the name");
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some(c @ ('\\' | '"' | '\'')) => out.push(c),
            Some('u') => {
                let rest: String = chars.by_ref().take_while(|&c| c != '}').collect();
                let code = rest
                    .strip_prefix('{')
                    .and_then(|h| u32::from_str_radix(h, 16).ok())
                    .and_then(char::from_u32)
                    .ok_or(bad.clone())?;
                out.push(code);
            }
            _ => return Err(bad),
        }
    }
    if out.len() > MAX_PEER_NAME {
        return Err(CredentialError::NameTooLong);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cred(name: &str) -> TrunkCredential {
        let addr = "192.0.2.1:4500".parse().unwrap();
        mint_trunk_credential(
            &TokenKey::new([7; 32]),
            &CredentialSpec {
                peer_id: 3,
                name,
                server_gateway_key: &PublicKey([9; 32]),
                addresses: &[addr],
                expires_unix_s: 2_000_000_000,
            },
            [1; 24],
        )
        .expect("mint")
    }

    #[test]
    fn text_round_trip() {
        let c = cred("edge-eu \"1\" \\ é");
        assert_eq!(TrunkCredential::from_text(&c.to_text()), Ok(c.clone()));
        assert_eq!(c.server_gateway_key(), PublicKey([9; 32]));
        assert_eq!(c.server_gateway(), Some("192.0.2.1:4500".parse().unwrap()));
        assert_eq!(
            mint_trunk_credential(
                &TokenKey::new([7; 32]),
                &CredentialSpec {
                    peer_id: 3,
                    name: &"x".repeat(65),
                    server_gateway_key: &PublicKey([9; 32]),
                    addresses: &[c.server_gateway().unwrap()],
                    expires_unix_s: 1
                },
                [1; 24]
            ),
            Err(CredentialError::NameTooLong)
        );
    }

    proptest! {
        /// Hostile text never panics; a credential's text always reads back.
        #[test]
        fn from_text_is_total(text in ".{0,300}", name in "[ -~]{0,64}") {
            let _ = TrunkCredential::from_text(&text);
            let c = cred(&name);
            prop_assert_eq!(TrunkCredential::from_text(&c.to_text()), Ok(c));
        }
    }
}
