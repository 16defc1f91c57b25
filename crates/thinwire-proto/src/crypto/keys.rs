//! The server's static X25519 key pair: the client knows the public half in advance (shipped
//! with the game, or carried in a connect token) and the Noise NK handshake proves the server
//! holds the secret half.

use std::fmt;
use std::str::FromStr;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// A server's static public key (X25519, 32 bytes). Written and parsed as 64 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(pub [u8; 32]);

impl fmt::Display for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

/// A public key that is not 64 hex digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a public key is 64 hex digits")]
pub struct KeyParseError;

impl FromStr for PublicKey {
    type Err = KeyParseError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let s = s.trim().as_bytes();
        // only hex digits: `from_str_radix` alone would take a sign
        if s.len() != 64 || !s.iter().all(u8::is_ascii_hexdigit) {
            return Err(KeyParseError);
        }
        let digit = |c: u8| (c as char).to_digit(16).expect("checked hex digit") as u8;
        let mut out = [0u8; 32];
        for (i, pair) in s.chunks_exact(2).enumerate() {
            out[i] = digit(pair[0]) << 4 | digit(pair[1]);
        }
        Ok(PublicKey(out))
    }
}

/// A server's static key pair. The secret half never leaves the server; keep it across
/// restarts (clients pin the public half, and the stateless reset tokens derive from it).
#[derive(Clone)]
pub struct ServerKey {
    secret: [u8; 32],
    public: PublicKey,
}

impl fmt::Debug for ServerKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ServerKey {{ public: {}, secret: .. }}", self.public)
    }
}

impl ServerKey {
    /// The key pair with this secret (any 32 bytes; X25519 clamps them).
    pub fn from_secret(secret: [u8; 32]) -> Self {
        let mut dh = super::x25519::x25519();
        dh.set(&secret);
        let mut public = [0u8; 32];
        public.copy_from_slice(dh.pubkey());
        Self {
            secret,
            public: PublicKey(public),
        }
    }

    /// A key pair drawn from `seed` (a runtime passes 32 bytes from the operating system;
    /// tests and simulations a fixed seed).
    pub fn generate(seed: [u8; 32]) -> Self {
        let mut rng = ChaCha20Rng::from_seed(seed);
        let mut secret = [0u8; 32];
        rng.fill_bytes(&mut secret);
        Self::from_secret(secret)
    }

    /// The public half, for clients.
    pub fn public(&self) -> PublicKey {
        self.public
    }

    /// The secret half (to store it).
    pub fn secret_bytes(&self) -> [u8; 32] {
        self.secret
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_key_hex_round_trip_and_refusals() {
        let k = ServerKey::generate([5; 32]).public();
        let text = k.to_string();
        assert_eq!(text.len(), 64);
        assert_eq!(text.parse::<PublicKey>(), Ok(k));
        assert_eq!("00".parse::<PublicKey>(), Err(KeyParseError));
        assert_eq!(
            text.replace(&text[..1], "g").parse::<PublicKey>(),
            Err(KeyParseError)
        );
        let with_sign = format!("+{}", &text[1..]);
        assert_eq!(with_sign.parse::<PublicKey>(), Err(KeyParseError));
    }

    #[test]
    fn same_secret_same_public_and_debug_hides_the_secret() {
        let a = ServerKey::generate([9; 32]);
        let b = ServerKey::from_secret(a.secret_bytes());
        assert_eq!(a.public(), b.public());
        assert_ne!(a.public(), ServerKey::generate([10; 32]).public());
        let shown = format!("{a:?}");
        let secret_hex: String = a
            .secret_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert!(!shown.contains(&secret_hex));
    }
}
