//! Cryptography of a connection: who the server is, how packets are sealed, how a peer that
//! lost its state proves it, and who may connect. Nothing here is invented: the handshake is
//! the Noise protocol `Noise_NK_25519_ChaChaPoly_BLAKE2s` (through the `snow` crate), packets
//! are sealed with a standard AEAD under the keys of its split, and the MACs are HMAC-SHA256.
//!
//! ```text
//!  client knows the server's static public key S (ServerKey::public)
//!  Connect  ── Noise NK message 1: e, es, encrypted(ConnectParams) ──►  server (after the cookie)
//!  Accept   ◄─ Noise NK message 2: e, ee, encrypted(AcceptParams) ───
//!  split ─► (client→server key, server→client key) ─► PacketKeys: AEAD, nonce = packet number,
//!                                                       associated data = the short header
//! ```
//!
//! | file | what |
//! |---|---|
//! | `keys.rs` | the server's static key pair and public key |
//! | `suite.rs` | cipher suites and sealing/opening of short-header packets (tests in `suite/`) |
//! | `aead.rs` | the packet AEADs (through ring), and when a direction keeps its expanded key |
//! | `noise.rs` | the two handshake messages, with the endpoint's seeded randomness |
//! | `reset.rs` | stateless reset tokens (and decoys for live connections) |
//! | `token/` | connect tokens minted by a matchmaking backend (and their tests) |
//! | `x25519.rs` | the Diffie-Hellman function (remembered in fuzzer builds, for speed) |

mod aead;
mod keys;
mod noise;
mod path;
mod reset;
mod suite;
pub(crate) mod token;
mod x25519;

pub use keys::{KeyParseError, PublicKey, ServerKey};
pub(crate) use noise::{prologue, Initiator, Responder};
pub(crate) use path::PathKey;
pub(crate) use reset::{tokens_equal, ResetKeys, RESET_TOKEN_LEN};
pub(crate) use suite::PacketKeys;
pub use suite::{CipherSuite, MIN_KEY_UPDATE_PACKETS};
pub use token::{
    ConnectToken, TokenClaims, TokenError, TokenKey, MAX_TOKEN_ADDRESSES, MAX_USER_DATA,
};
