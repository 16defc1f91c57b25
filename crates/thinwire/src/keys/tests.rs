use std::path::PathBuf;

use super::*;

/// A fresh directory under the system's temporary directory, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("thinwire-keys-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        Self(dir)
    }

    fn join(&self, file: &str) -> PathBuf {
        self.0.join(file)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .expect("metadata")
        .permissions()
        .mode()
        & 0o777
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

#[test]
fn generated_keys_differ() {
    let (a, b) = (generate_server_key(), generate_server_key());
    assert_ne!(a.secret_bytes(), b.secret_bytes());
    assert_ne!(a.public(), b.public());
    assert_ne!(
        generate_token_key().as_bytes(),
        generate_token_key().as_bytes()
    );
}

#[test]
fn keys_read_back_what_was_written() {
    let dir = TempDir::new("round-trip");
    let key = generate_server_key();
    write_server_key(dir.join("server.key"), &key).expect("written");
    write_public_key(dir.join("server.key.pub"), &key.public()).expect("written");
    let read = read_server_key(dir.join("server.key")).expect("read");
    assert_eq!(read.secret_bytes(), key.secret_bytes());
    assert_eq!(
        read_public_key(dir.join("server.key.pub")).expect("read"),
        key.public()
    );
    let text = std::fs::read_to_string(dir.join("server.key")).expect("text");
    assert_eq!(text, format!("{}\n", key.secret_hex()));
    let token = generate_token_key();
    write_token_key(dir.join("token.key"), &token).expect("written");
    let read = read_token_key(dir.join("token.key")).expect("read");
    assert_eq!(read.as_bytes(), token.as_bytes());
}

#[cfg(unix)]
#[test]
fn a_secret_file_is_created_0600_and_one_others_may_read_is_refused() {
    let dir = TempDir::new("mode");
    let (secret, public) = (dir.join("server.key"), dir.join("server.key.pub"));
    let key = generate_server_key();
    write_server_key(&secret, &key).expect("written");
    write_public_key(&public, &key.public()).expect("written");
    assert_eq!(mode(&secret), 0o600);
    assert_eq!(
        mode(&public) & 0o600,
        0o600,
        "the owner reads and writes it"
    );
    assert_eq!(mode(&public) & 0o022, 0, "nobody else writes it");
    set_mode(&secret, 0o640);
    match read_server_key(&secret) {
        Err(KeyFileError::TooOpen { mode, .. }) => assert_eq!(mode, 0o640),
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        read_token_key(&secret),
        Err(KeyFileError::TooOpen { .. })
    ));
    set_mode(&secret, 0o400);
    assert!(read_server_key(&secret).is_ok(), "read-only for its owner");
    set_mode(&public, 0o644);
    assert!(read_public_key(&public).is_ok(), "a public key is public");
}

#[test]
fn a_key_file_is_never_overwritten() {
    let dir = TempDir::new("overwrite");
    let path = dir.join("server.key");
    let first = generate_server_key();
    write_server_key(&path, &first).expect("written");
    match write_server_key(&path, &generate_server_key()) {
        Err(e @ KeyFileError::Exists { .. }) => {
            assert!(e.to_string().contains("not overwritten"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        write_public_key(&path, &first.public()),
        Err(KeyFileError::Exists { .. })
    ));
    let kept = read_server_key(&path).expect("read");
    assert_eq!(
        kept.secret_bytes(),
        first.secret_bytes(),
        "the first key is kept"
    );
}

#[test]
fn comments_and_blank_lines_are_skipped_and_anything_else_refused() {
    let dir = TempDir::new("format");
    let key = generate_server_key();
    let public = key.public().to_string();
    let path = dir.join("server.key.pub");
    let read = |text: &str| {
        let _ = std::fs::remove_file(&path);
        std::fs::write(&path, text).expect("write");
        read_public_key(&path)
    };
    assert_eq!(read(&public).expect("no newline"), key.public());
    let commented = format!(
        "# the game server's key\n\n  {}  \r\n# end\n",
        public.to_uppercase()
    );
    assert_eq!(read(&commented).expect("commented"), key.public());
    for bad in [
        String::new(),
        "# only a comment\n".to_string(),
        format!("{public}\n{public}\n"),
        public[..63].to_string(),
        format!("{public}0"),
        format!("key = {public}"),
    ] {
        match read(&bad) {
            Err(e @ KeyFileError::Parse { .. }) => {
                assert!(!e.to_string().contains(&public[..16]), "no key text: {e}");
            }
            other => panic!("{bad:?}: {other:?}"),
        }
    }
    match read_server_key(dir.join("missing.key")) {
        Err(KeyFileError::Io { source, .. }) => {
            assert_eq!(source.kind(), io::ErrorKind::NotFound);
        }
        other => panic!("{other:?}"),
    }
}
