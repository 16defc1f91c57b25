//! `thinwire keygen`: a new server key pair from the operating system's randomness, in two
//! files (`thinwire::keys`): the secret (mode 0600) and, beside it, the public key (`.pub`).

use std::ffi::OsString;
use std::path::PathBuf;

use thinwire::keys;

/// `thinwire keygen`.
#[derive(Debug, clap::Args)]
pub(crate) struct KeygenArgs {
    /// The secret key file to write (64 hex digits, mode 0600); the public key goes to the
    /// same name with `.pub` added. Neither may exist: a key is never overwritten.
    #[arg(long)]
    out: PathBuf,
}

/// Writes both files and prints the public key.
pub(crate) fn run(a: KeygenArgs) -> Result<(), String> {
    let secret = a.out;
    let mut public = OsString::from(secret.as_os_str());
    public.push(".pub");
    let public = PathBuf::from(public);
    // both checked first, so that a refusal leaves no half-written pair
    for path in [&secret, &public] {
        if std::fs::symlink_metadata(path).is_ok() {
            return Err(format!(
                "{}: exists; not overwritten (a new key cuts off every client that knows the \
                 old one: remove it first if that is meant)",
                path.display()
            ));
        }
    }
    let key = keys::generate_server_key();
    keys::write_server_key(&secret, &key).map_err(|e| e.to_string())?;
    keys::write_public_key(&public, &key.public()).map_err(|e| e.to_string())?;
    eprintln!(
        "wrote {} (secret, mode 0600) and {} (public key)",
        secret.display(),
        public.display()
    );
    println!("{}", key.public());
    Ok(())
}
