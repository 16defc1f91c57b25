//! `thinwire gateway credential`: mints the trunk credential of an edge (or tcm-local) with
//! the operator key (`docs/GATEWAY.md` §2, Admission).

use std::path::PathBuf;
use std::time::Duration;

use thinwire_gateway::run::{
    expires_in, fresh_nonce, load_or_create_operator_key, save_credential,
};
use thinwire_gateway::trunk::{mint_trunk_credential, CredentialSpec, MAX_PEER_NAME};
use thinwire_proto::PublicKey;

use super::addr::resolve;

/// Longest validity accepted, in days (ten years).
const MAX_DAYS: u64 = 3_650;

/// `thinwire gateway credential`.
#[derive(Debug, clap::Args)]
pub(crate) struct CredentialArgs {
    /// The operator key file (64 hex digits; created when missing): the server gateway's
    /// `--operator-key-file` / `operator_key_file`.
    #[arg(long)]
    operator_key_file: PathBuf,
    /// The peer's id (admitted by a `[[peer]]` / `--peer` with this id at the server gateway).
    #[arg(long)]
    peer_id: u64,
    /// The peer's name (at most 64 bytes).
    #[arg(long)]
    name: String,
    /// The server gateway's trunk address as the edge reaches it (host:port; a name is
    /// resolved now; the edge may dial another with its own `--server-gateway`).
    #[arg(long)]
    server_gateway: String,
    /// The server gateway's public key (hex; printed at its start and by `keygen`).
    #[arg(long)]
    server_gateway_key: PublicKey,
    /// Validity in days.
    #[arg(long, default_value_t = 365)]
    days: u64,
    /// Where to write the credential (a new file, mode 0600; an existing file is kept).
    #[arg(long)]
    out: PathBuf,
}

/// Mints the credential and writes it.
pub(crate) fn run(a: CredentialArgs) -> Result<(), String> {
    if !(1..=MAX_DAYS).contains(&a.days) {
        return Err(format!("--days {}: must be 1 to {MAX_DAYS}", a.days));
    }
    if a.name.is_empty() || a.name.len() > MAX_PEER_NAME {
        return Err(format!("--name: 1 to {MAX_PEER_NAME} bytes"));
    }
    let address = resolve("--server-gateway", &a.server_gateway, None)?;
    let key = load_or_create_operator_key(&a.operator_key_file).map_err(|e| e.to_string())?;
    let spec = CredentialSpec {
        peer_id: a.peer_id,
        name: &a.name,
        server_gateway_key: &a.server_gateway_key,
        addresses: &[address],
        expires_unix_s: expires_in(Duration::from_secs(a.days * 86_400)),
    };
    let c = mint_trunk_credential(&key, &spec, fresh_nonce()).map_err(|e| e.to_string())?;
    save_credential(&a.out, &c).map_err(|e| e.to_string())?;
    println!(
        "credential of peer {} ({}) for {address} written to {}",
        c.peer,
        c.name,
        a.out.display()
    );
    Ok(())
}
