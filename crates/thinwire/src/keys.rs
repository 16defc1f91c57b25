//! Keys from the operating system's randomness, and key files.
//!
//! A server's static key pair must outlive the process: its clients pin the public half, and
//! its stateless resets derive from the secret half. The usual life of one:
//!
//! ```no_run
//! use thinwire::keys;
//!
//! # fn main() -> Result<(), keys::KeyFileError> {
//! // once, when the server is deployed (`thinwire keygen --out server.key` does the same)
//! let key = keys::generate_server_key();
//! keys::write_server_key("server.key", &key)?; // mode 0600, never overwrites
//! keys::write_public_key("server.key.pub", &key.public())?; // for the game client
//! // at every start of the server
//! let key = keys::read_server_key("server.key")?;
//! // in the client (or shipped inside it)
//! let public = keys::read_public_key("server.key.pub")?;
//! # let _ = (key, public);
//! # Ok(())
//! # }
//! ```
//!
//! **Format.** One line of 64 hex digits (the secret, or the public key), as
//! [`ServerKey::secret_hex`] and `PublicKey`'s `Display` write it and their `FromStr` read it;
//! a reader also takes lines starting with `#` (comments) and blank lines around it.
//!
//! **Permissions (Unix).** A secret file is created with mode 0600 in one step (never
//! readable by others, not even for a moment) and never overwritten: replacing a server's key
//! cuts off every client that pinned the old one, so it is a deliberate `rm` first. A secret
//! file that the group or others may read is refused ([`KeyFileError::TooOpen`]), as `ssh`
//! refuses such a private key: the secret may have leaked, and a silent warning would let it
//! go on leaking. Public key files are created 0644.
//!
//! Token keys (the secret a matchmaking backend shares with its game servers to seal connect
//! tokens) are 32 secret bytes too, and their files follow the same rules
//! ([`read_token_key`], [`write_token_key`]).

use std::fs::File;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use rand::TryRngCore;
use thinwire_proto::{KeyParseError, PublicKey, ServerKey, TokenKey};

/// Why a key file could not be read or written.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// Reading or writing the file failed (the system's error: missing, no permission, ...).
    #[error("key file {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: io::Error,
    },
    /// The file does not hold one key: one line of 64 hex digits (besides `#` comments and
    /// blank lines).
    #[error("key file {}: {source}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// What is wrong (it does not repeat the text, which may be a secret).
        source: KeyParseError,
    },
    /// Writing refused: the file exists (a key is never overwritten; remove it first).
    #[error("key file {}: exists; not overwritten (remove it first, and its old key with it)", path.display())]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// Reading a secret refused: the group or others may read the file (Unix).
    #[error("key file {}: readable by others (mode {mode:o}); `chmod 600` it", path.display())]
    TooOpen {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
}

/// A new server key pair, its secret 32 bytes from the operating system's random source.
///
/// # Panics
/// If the operating system has no random source to give (as `rand::rng()` would).
pub fn generate_server_key() -> ServerKey {
    ServerKey::from_secret(os_random())
}

/// A new token key, 32 bytes from the operating system's random source.
///
/// # Panics
/// If the operating system has no random source to give.
pub fn generate_token_key() -> TokenKey {
    TokenKey::new(os_random())
}

/// Writes `key`'s secret to a new file at `path` (64 hex digits and a newline), mode 0600 on
/// Unix from its creation; an existing file is an error ([`KeyFileError::Exists`]), never
/// overwritten.
pub fn write_server_key(path: impl AsRef<Path>, key: &ServerKey) -> Result<(), KeyFileError> {
    write_new(path.as_ref(), &key.secret_hex(), 0o600)
}

/// Reads the server key pair whose secret is in the file at `path` (see the module's
/// format); on Unix a file others may read is refused ([`KeyFileError::TooOpen`]).
pub fn read_server_key(path: impl AsRef<Path>) -> Result<ServerKey, KeyFileError> {
    read_key(path.as_ref(), true)
}

/// Writes `key` to a new file at `path` (64 hex digits and a newline), mode 0644 on Unix; an
/// existing file is an error ([`KeyFileError::Exists`]).
pub fn write_public_key(path: impl AsRef<Path>, key: &PublicKey) -> Result<(), KeyFileError> {
    write_new(path.as_ref(), &key.to_string(), 0o644)
}

/// Reads the public key in the file at `path` (see the module's format).
pub fn read_public_key(path: impl AsRef<Path>) -> Result<PublicKey, KeyFileError> {
    read_key(path.as_ref(), false)
}

/// Writes `key` to a new file at `path` like [`write_server_key`] (mode 0600, never
/// overwritten).
pub fn write_token_key(path: impl AsRef<Path>, key: &TokenKey) -> Result<(), KeyFileError> {
    let hex = PublicKey(*key.as_bytes()).to_string();
    write_new(path.as_ref(), &hex, 0o600)
}

/// Reads the token key in the file at `path` like [`read_server_key`] (a file others may
/// read is refused on Unix).
pub fn read_token_key(path: impl AsRef<Path>) -> Result<TokenKey, KeyFileError> {
    let bytes: PublicKey = read_key(path.as_ref(), true)?;
    Ok(TokenKey::new(bytes.0))
}

fn os_random() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .expect("the operating system's random source");
    bytes
}

/// Creates `path` (never replacing a file) with `mode` on Unix and writes `line` and a newline.
fn write_new(path: &Path, line: &str, mode: u32) -> Result<(), KeyFileError> {
    let mut options = File::options();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, mode);
    #[cfg(not(unix))]
    let _ = mode;
    let io = |source: io::Error| match source.kind() {
        io::ErrorKind::AlreadyExists => KeyFileError::Exists {
            path: path.to_owned(),
        },
        _ => KeyFileError::Io {
            path: path.to_owned(),
            source,
        },
    };
    let mut file = options.open(path).map_err(io)?;
    file.write_all(format!("{line}\n").as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)
}

/// Reads the one key line of `path` (checking, for a `secret`, that others cannot read it).
fn read_key<K: std::str::FromStr<Err = KeyParseError>>(
    path: &Path,
    secret: bool,
) -> Result<K, KeyFileError> {
    let io = |source| KeyFileError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = File::open(path).map_err(io)?;
    #[cfg(unix)]
    if secret {
        use std::os::unix::fs::PermissionsExt;
        // the mode of the file opened, not of whatever the path names a moment later
        let mode = file.metadata().map_err(io)?.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(KeyFileError::TooOpen {
                path: path.to_owned(),
                mode,
            });
        }
    }
    #[cfg(not(unix))]
    let _ = secret;
    let mut text = String::new();
    // a key file is one short line: a larger one is not a key file (and is not read whole)
    (&mut file)
        .take(4096)
        .read_to_string(&mut text)
        .map_err(io)?;
    key_line(&text)
        .parse()
        .map_err(|source| KeyFileError::Parse {
            path: path.to_owned(),
            source,
        })
}

/// The text's one line that is neither blank nor a `#` comment ("" when there are none or
/// several, which no key parses).
fn key_line(text: &str) -> &str {
    let mut lines = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'));
    match (lines.next(), lines.next()) {
        (Some(line), None) => line,
        _ => "",
    }
}

#[cfg(test)]
mod tests;
