//! Trunk credentials and the operator key in files: what the CLI's `gateway` commands read
//! (see [`crate::trunk::TrunkCredential`] for what a credential is).
//!
//! - The **operator key** file holds 64 hex digits (32 secret bytes), like a gateway's key
//!   file; only the server gateway (or tcm-remote) and whoever mints credentials read it.
//! - A **credential** file holds [`TrunkCredential::to_text`]: the edge's (or tcm-local's)
//!   peer id, name and connect token. It is a secret of that edge (a copy of it is a copy of
//!   the edge's identity): mode 0600.

use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::Rng;
use thinwire_proto::TokenKey;

use thinwire::keys::{self, KeyFileError};

use super::keys::load_or_create_token_key;
use crate::trunk::{CredentialError, TrunkCredential};

/// Why a credential file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum CredentialFileError {
    /// Reading or writing the file failed.
    #[error("credential file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: io::Error,
    },
    /// The file does not hold a credential.
    #[error("credential file {path}: {source}")]
    Malformed {
        /// The file.
        path: String,
        /// What is wrong.
        source: CredentialError,
    },
}

/// Reads a credential file.
pub fn load_credential(path: &Path) -> Result<TrunkCredential, CredentialFileError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| CredentialFileError::Io {
        path: name.clone(),
        source,
    })?;
    TrunkCredential::from_text(&text)
        .map_err(|source| CredentialFileError::Malformed { path: name, source })
}

/// Writes a credential file (a new file, mode 0600 on Unix; an existing file is an error).
/// A credential is a secret like a key, written under the same rules as
/// [`thinwire::keys::write_server_key`].
pub fn save_credential(
    path: &Path,
    credential: &TrunkCredential,
) -> Result<(), CredentialFileError> {
    write_private(path, credential.to_text().trim_end()).map_err(|source| CredentialFileError::Io {
        path: path.display().to_string(),
        source,
    })
}

/// The operator key in `path` (64 hex digits); when the file does not exist, a new key drawn
/// from the operating system is written there (mode 0600 on Unix) and returned.
pub fn load_or_create_operator_key(path: &Path) -> Result<TokenKey, KeyFileError> {
    load_or_create_token_key(path)
}

/// The token key in `path` (64 hex digits), e.g. the game backend's or the game server's:
/// unlike the operator key, never created (a new key would match no one's).
pub fn load_token_key(path: &Path) -> Result<TokenKey, KeyFileError> {
    keys::read_token_key(path)
}

#[cfg(unix)]
fn write_private(path: &Path, text: &str) -> io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    writeln!(f, "{text}")
}

#[cfg(not(unix))]
fn write_private(path: &Path, text: &str) -> io::Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)?;
    writeln!(f, "{text}")
}

/// The unix time (seconds) `valid_for` from now, by the wall clock: a credential's expiry.
pub fn expires_in(valid_for: Duration) -> u64 {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (now + valid_for).as_secs()
}

/// 24 nonce bytes for minting a credential, from the operating system.
pub fn fresh_nonce() -> [u8; 24] {
    rand::rng().random()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trunk::{mint_trunk_credential, CredentialSpec};
    use thinwire_proto::PublicKey;

    #[test]
    fn a_credential_file_reads_back_and_an_operator_key_is_kept() {
        let dir = std::env::temp_dir().join(format!("tw-gw-cred-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let key = load_or_create_operator_key(&dir.join("operator")).expect("created");
        let again = load_or_create_operator_key(&dir.join("operator")).expect("read");
        assert_eq!(key.as_bytes(), again.as_bytes());
        let read = load_token_key(&dir.join("operator")).expect("read as a token key");
        assert_eq!(read.as_bytes(), key.as_bytes());
        assert!(load_token_key(&dir.join("none")).is_err(), "never created");
        assert!(!dir.join("none").exists());
        let addr = "192.0.2.1:4500".parse().expect("addr");
        let c = mint_trunk_credential(
            &key,
            &CredentialSpec {
                peer_id: 7,
                name: "edge-7",
                server_gateway_key: &PublicKey([1; 32]),
                addresses: &[addr],
                expires_unix_s: 2_000_000_000,
            },
            fresh_nonce(),
        )
        .expect("minted");
        let path = dir.join("edge.cred");
        save_credential(&path, &c).expect("saved");
        assert_eq!(load_credential(&path).expect("read"), c);
        assert!(save_credential(&path, &c).is_err(), "never overwritten");
        std::fs::write(&path, "peer = 7\n").expect("write");
        assert!(matches!(
            load_credential(&path),
            Err(CredentialFileError::Malformed { .. })
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
