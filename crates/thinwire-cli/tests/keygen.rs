//! `thinwire keygen`: a key pair in two files, the secret one private, never overwritten.

use std::process::{Command, Output};

fn thinwire(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_thinwire"))
        .args(args)
        .output()
        .expect("runs the binary")
}

#[test]
fn keygen_writes_a_private_secret_and_its_public_key_and_never_overwrites() {
    let dir = std::env::temp_dir().join(format!("thinwire-cli-keygen-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let secret = dir.join("server.key");
    let public = dir.join("server.key.pub");
    let out = secret.to_str().expect("utf-8");

    let o = thinwire(&["keygen", "--out", out]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let printed = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    let key = thinwire::keys::read_server_key(&secret).expect("a server key");
    assert_eq!(printed, key.public().to_string(), "prints the public key");
    let read = thinwire::keys::read_public_key(&public).expect("a public key");
    assert_eq!(read, key.public());
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&secret)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }

    let before = std::fs::read(&secret).expect("read");
    let again = thinwire(&["keygen", "--out", out]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(!again.status.success());
    assert!(err.contains("not overwritten"), "{err}");
    assert_eq!(std::fs::read(&secret).expect("read"), before, "kept");

    // the public file alone in the way: nothing is written
    let other = dir.join("other.key");
    std::fs::write(dir.join("other.key.pub"), "x").expect("write");
    let o = thinwire(&["keygen", "--out", other.to_str().expect("utf-8")]);
    assert!(!o.status.success());
    assert!(!other.exists(), "no secret without its public file");
    let _ = std::fs::remove_dir_all(&dir);
}
