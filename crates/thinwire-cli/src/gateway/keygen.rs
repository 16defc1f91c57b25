//! `thinwire gateway keygen`: a new static key file for a gateway.

use std::path::PathBuf;

use thinwire_gateway::run::load_or_create_key;

/// `thinwire gateway keygen`.
#[derive(Debug, clap::Args)]
pub(crate) struct KeygenArgs {
    /// The key file to write (64 hex digits of secret, mode 0600).
    #[arg(long)]
    key_file: PathBuf,
    /// Replace the file if it exists (the old key is lost: its peers must be given the new
    /// public key).
    #[arg(long)]
    force: bool,
}

/// Writes the key file and prints the public key.
pub(crate) fn run(a: KeygenArgs) -> Result<(), String> {
    let path = &a.key_file;
    match std::fs::symlink_metadata(path) {
        Ok(_) if !a.force => {
            return Err(format!(
                "{}: exists; not overwritten (--force replaces it, and its old key)",
                path.display()
            ))
        }
        Ok(m) if m.is_dir() => return Err(format!("{}: is a directory", path.display())),
        Ok(_) => std::fs::remove_file(path).map_err(|e| format!("{}: {e}", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("{}: {e}", path.display())),
    }
    // the file does not exist now: this creates it (create_new, mode 0600)
    let key = load_or_create_key(path).map_err(|e| e.to_string())?;
    eprintln!("wrote {}", path.display());
    println!("{}", key.public());
    Ok(())
}
