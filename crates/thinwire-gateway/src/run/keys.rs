//! A gateway's static key, kept in a file across restarts (clients pin its public half).

use std::io;
use std::path::Path;

use rand::Rng;
use thinwire_proto::ServerKey;

/// Why a key file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// Reading or writing the file failed.
    #[error("key file {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The error.
        source: io::Error,
    },
    /// The file does not hold 64 hexadecimal digits.
    #[error("key file {0}: expected 64 hexadecimal digits (a 32-byte secret)")]
    Malformed(String),
}

/// The key in `path` (64 hex digits of secret); when the file does not exist, a new key drawn
/// from the operating system is written there (mode 0600 on Unix) and returned.
pub fn load_or_create_key(path: &Path) -> Result<ServerKey, KeyFileError> {
    load_or_create_secret(path).map(ServerKey::from_secret)
}

/// The 32-byte secret in `path` (64 hex digits); when the file does not exist, a new one drawn
/// from the operating system is written there (mode 0600 on Unix) and returned. Every secret
/// file of the gateway (its static key, the operator key) is read and made here.
pub(super) fn load_or_create_secret(path: &Path) -> Result<[u8; 32], KeyFileError> {
    let name = path.display().to_string();
    let io_err = |source| KeyFileError::Io {
        path: name.clone(),
        source,
    };
    match std::fs::read_to_string(path) {
        Ok(text) => parse_secret(text.trim()).ok_or(KeyFileError::Malformed(name.clone())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let secret: [u8; 32] = rand::rng().random();
            let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
            write_private(path, &hex).map_err(io_err)?;
            Ok(secret)
        }
        Err(e) => Err(io_err(e)),
    }
}

pub(super) fn parse_secret(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, b) in out.iter_mut().enumerate() {
        *b = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

#[cfg(unix)]
pub(super) fn write_private(path: &Path, text: &str) -> io::Result<()> {
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
pub(super) fn write_private(path: &Path, text: &str) -> io::Result<()> {
    std::fs::write(path, format!("{text}\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_is_created_once_then_read_back() {
        let dir = std::env::temp_dir().join(format!("tw-gw-key-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let a = load_or_create_key(&dir).expect("created");
        let b = load_or_create_key(&dir).expect("read");
        assert_eq!(a.public(), b.public());
        std::fs::write(&dir, "not hex").expect("write");
        assert!(matches!(
            load_or_create_key(&dir),
            Err(KeyFileError::Malformed(_))
        ));
        let _ = std::fs::remove_file(&dir);
    }
}
