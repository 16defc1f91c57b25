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
        write_hex(f, &self.0)
    }
}

/// 64 lowercase hex digits of 32 bytes: the text of both key types.
fn write_hex(out: &mut impl fmt::Write, bytes: &[u8; 32]) -> fmt::Result {
    for b in bytes {
        write!(out, "{b:02x}")?;
    }
    Ok(())
}

/// The 32 bytes of 64 hex digits (either case), after trimming surrounding whitespace.
fn parse_hex(s: &str) -> Result<[u8; 32], KeyParseError> {
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
    Ok(out)
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({self})")
    }
}

/// A key's text ([`PublicKey`] or [`ServerKey`]) that is not 64 hex digits (surrounding
/// whitespace aside). It does not repeat the text: it may be a secret.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a key is 64 hex digits")]
pub struct KeyParseError;

impl FromStr for PublicKey {
    type Err = KeyParseError;

    /// 64 hex digits (either case), surrounding whitespace trimmed: what `Display` writes.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_hex(s).map(PublicKey)
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

    /// The secret half as 64 lowercase hex digits, what [`FromStr`] reads back (to store it;
    /// `thinwire::keys::write_server_key` writes it to a file only its owner can read).
    pub fn secret_hex(&self) -> String {
        let mut out = String::with_capacity(64);
        write_hex(&mut out, &self.secret).expect("a String takes every write");
        out
    }
}

impl FromStr for ServerKey {
    type Err = KeyParseError;

    /// The key pair of a secret written as 64 hex digits (either case), surrounding whitespace
    /// trimmed: what [`ServerKey::secret_hex`] writes.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_hex(s).map(ServerKey::from_secret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

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
        assert!(shown.contains(&a.public().to_string()), "{shown}");
        assert!(!shown.contains(&a.secret_hex()), "{shown}");
        let upper = a.secret_hex().to_uppercase();
        assert!(!shown.to_uppercase().contains(&upper), "{shown}");
    }

    proptest! {
        #[test]
        fn both_keys_read_back_what_they_write(secret in any::<[u8; 32]>(), upper: bool) {
            let key = ServerKey::from_secret(secret);
            let text = key.secret_hex();
            prop_assert_eq!(text.len(), 64);
            let text = if upper { text.to_uppercase() } else { text };
            let read: ServerKey = format!(" {text}\n").parse().expect("its own text");
            prop_assert_eq!(read.secret_bytes(), secret);
            prop_assert_eq!(read.public(), key.public());
            let public = key.public().to_string();
            prop_assert_eq!(public.parse::<PublicKey>(), Ok(key.public()));
            prop_assert_eq!(PublicKey(secret).to_string().parse(), Ok(PublicKey(secret)));
        }

        #[test]
        fn a_wrong_length_is_refused(digits in "[0-9a-fA-F]{0,130}") {
            prop_assume!(digits.len() != 64);
            prop_assert_eq!(digits.parse::<PublicKey>(), Err(KeyParseError));
            prop_assert!(digits.parse::<ServerKey>().is_err());
        }

        #[test]
        fn a_digit_that_is_not_hex_is_refused(
            secret in any::<[u8; 32]>(),
            at in 0usize..64,
            // never a hex digit: the mutation always changes what is parsed
            c in any::<char>().prop_filter("not a hex digit", |c| !c.is_ascii_hexdigit()),
        ) {
            let mut text: Vec<char> = ServerKey::from_secret(secret).secret_hex().chars().collect();
            text[at] = c;
            let text: String = text.into_iter().collect();
            prop_assert_eq!(text.parse::<PublicKey>(), Err(KeyParseError));
            prop_assert!(text.parse::<ServerKey>().is_err());
        }
    }
}
