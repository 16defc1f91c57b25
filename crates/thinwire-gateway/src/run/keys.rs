//! A gateway's secrets kept in files across restarts (clients pin its public key): read and
//! written by [`thinwire::keys`] (64 hex digits, created 0600, refused if others may read
//! them), and created here when missing.

use std::io;
use std::path::Path;

use thinwire::keys::{self, KeyFileError};
use thinwire_proto::{ServerKey, TokenKey};

/// The key in `path` (64 hex digits of secret); when the file does not exist, a new key drawn
/// from the operating system is written there (mode 0600 on Unix) and returned.
pub fn load_or_create_key(path: &Path) -> Result<ServerKey, KeyFileError> {
    or_create(keys::read_server_key(path), || {
        let key = keys::generate_server_key();
        keys::write_server_key(path, &key).map(|()| key)
    })
}

/// The token key in `path`; when the file does not exist, a new key drawn from the operating
/// system is written there (mode 0600 on Unix) and returned.
pub(super) fn load_or_create_token_key(path: &Path) -> Result<TokenKey, KeyFileError> {
    or_create(keys::read_token_key(path), || {
        let key = keys::generate_token_key();
        keys::write_token_key(path, &key).map(|()| key)
    })
}

/// What a file read found, or, when there was no such file, what `create` makes there.
fn or_create<K>(
    read: Result<K, KeyFileError>,
    create: impl FnOnce() -> Result<K, KeyFileError>,
) -> Result<K, KeyFileError> {
    match read {
        Err(KeyFileError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            create()
        }
        found => found,
    }
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
        let t = load_or_create_token_key(&dir).expect("the same format");
        assert_eq!(t.as_bytes(), &a.secret_bytes());
        std::fs::remove_file(&dir).expect("remove");
        std::fs::write(&dir, "not hex").expect("write");
        assert!(matches!(
            load_or_create_key(&dir),
            Err(KeyFileError::Parse { .. }) | Err(KeyFileError::TooOpen { .. })
        ));
        let _ = std::fs::remove_file(&dir);
    }
}
