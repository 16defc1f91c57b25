//! The configuration file of each gateway role (`--config FILE`, TOML): everything the flags
//! say, plus the trunk admission settings (allowed peers, the operator key, a peer's
//! credential). Flags override the file; an unknown key is an error naming the file and
//! line. Relative paths in a file are relative to the file's directory. Commented examples:
//! `docs/examples/gateway/`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Deserialize;
use thinwire_gateway::run::Cidr;
use thinwire_proto::PublicKey;
use toml::Spanned;

use super::addr::{bind_and_peer, resolve};
use super::TrunkPeerArgs;

/// A value that is parsed after reading (an address, a key, a prefix), with its place.
pub(crate) type Text = Spanned<String>;

/// Bounds of an edge or server gateway (`[limits]`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Limits {
    pub(crate) max_flows: Option<usize>,
    pub(crate) max_flow_backlog: Option<usize>,
    pub(crate) max_held: Option<usize>,
}

/// One allowed trunk peer of a server gateway or tcm-remote (`[[peer]]`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PeerEntry {
    pub(crate) id: u32,
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) prefixes: Vec<Text>,
}

/// The values every role's file may hold, besides its own (see [`role_file`]).
pub(crate) struct OpsFile<'a> {
    pub(crate) key_file: Option<&'a PathBuf>,
    pub(crate) period_ms: Option<u64>,
    pub(crate) report_every: Option<f64>,
    pub(crate) metrics: Option<&'a Text>,
}

/// A role's file: its own fields, then the ones every role has (`key_file`, `period_ms`,
/// `report_every`, `metrics`; serde's `flatten` cannot be combined with
/// `deny_unknown_fields`, hence the macro).
macro_rules! role_file {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $field:ident: $ty:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, Default, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub(crate) struct $name {
            $($(#[$fm])* pub(crate) $field: $ty,)*
            pub(crate) key_file: Option<PathBuf>,
            pub(crate) period_ms: Option<u64>,
            pub(crate) report_every: Option<f64>,
            pub(crate) metrics: Option<Text>,
        }

        impl $name {
            /// The values every role has.
            pub(crate) fn ops(&self) -> OpsFile<'_> {
                OpsFile {
                    key_file: self.key_file.as_ref(),
                    period_ms: self.period_ms,
                    report_every: self.report_every,
                    metrics: self.metrics.as_ref(),
                }
            }
        }
    };
}

/// The trunk's far end in an edge's or tcm-local's file.
pub(crate) struct TrunkPeerFile<'a> {
    server_gateway: Option<&'a Text>,
    key: Option<&'a Text>,
    trunk_bind: Option<&'a Text>,
    credential_file: Option<&'a PathBuf>,
}

/// `peer()` of a file with the trunk's far end.
macro_rules! trunk_peer_file {
    ($t:ty) => {
        impl $t {
            /// The trunk's far end.
            pub(crate) fn peer(&self) -> TrunkPeerFile<'_> {
                TrunkPeerFile {
                    server_gateway: self.server_gateway.as_ref(),
                    key: self.server_gateway_key.as_ref(),
                    trunk_bind: self.trunk_bind.as_ref(),
                    credential_file: self.credential_file.as_ref(),
                }
            }
        }
    };
}
trunk_peer_file!(EdgeFile);
trunk_peer_file!(TcmLocalFile);

role_file! {
    /// `edge.toml`.
    EdgeFile {
        listen: Option<Text>,
        server_gateway: Option<Text>,
        server_gateway_key: Option<Text>,
        trunk_bind: Option<Text>,
        credential_file: Option<PathBuf>,
        #[serde(default)]
        limits: Limits,
    }
}

role_file! {
    /// `server.toml`.
    ServerFile {
        listen: Option<Text>,
        game_server: Option<Text>,
        game_server_key: Option<Text>,
        upstream_bind: Option<Text>,
        operator_key_file: Option<PathBuf>,
        accept_any_source: Option<bool>,
        #[serde(default)]
        peer: Vec<PeerEntry>,
        #[serde(default)]
        limits: Limits,
    }
}

/// The TUN device of a TCM process (`[tun]`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct TunFile {
    pub(crate) name: Option<String>,
    pub(crate) address: Option<Text>,
    pub(crate) routes: Option<Vec<Text>>,
}

role_file! {
    /// `tcm-local.toml`.
    TcmLocalFile {
        server_gateway: Option<Text>,
        server_gateway_key: Option<Text>,
        trunk_bind: Option<Text>,
        credential_file: Option<PathBuf>,
        #[serde(default)]
        tun: TunFile,
    }
}

role_file! {
    /// `tcm-remote.toml`.
    TcmRemoteFile {
        listen: Option<Text>,
        operator_key_file: Option<PathBuf>,
        accept_any_source: Option<bool>,
        #[serde(default)]
        peer: Vec<PeerEntry>,
        #[serde(default)]
        tun: TunFile,
    }
}

/// A configuration file as read (or none: every value from the flags).
#[derive(Debug)]
pub(crate) struct Loaded<T> {
    pub(crate) file: T,
    path: Option<PathBuf>,
    text: String,
}

/// 1-based line of byte `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    1 + text.as_bytes()[..at.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
}

/// Reads and checks a configuration file (`None`: the defaults, every value from the flags).
pub(crate) fn load<T: DeserializeOwned + Default>(
    path: Option<&Path>,
) -> Result<Loaded<T>, String> {
    let Some(path) = path else {
        return Ok(Loaded {
            file: T::default(),
            path: None,
            text: String::new(),
        });
    };
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let file = toml::from_str(&text).map_err(|e: toml::de::Error| {
        let line = e.span().map_or(1, |s| line_of(&text, s.start));
        format!("{}:{line}: {}", path.display(), e.message().trim_end())
    })?;
    Ok(Loaded {
        file,
        path: Some(path.to_owned()),
        text,
    })
}

impl<T> Loaded<T> {
    /// `FILE:LINE: key`, the name of a value read from the file (for errors).
    pub(crate) fn at(&self, v: &Text, key: &str) -> String {
        let path = self.path.as_deref().unwrap_or(Path::new("-"));
        format!(
            "{}:{}: {key}",
            path.display(),
            line_of(&self.text, v.span().start)
        )
    }

    /// The flag's value (named `--flag`), else the file's (named by its place), as text.
    pub(crate) fn pick(
        &self,
        flag: Option<&str>,
        name: &str,
        file: Option<&Text>,
    ) -> Option<(String, String)> {
        match (flag, file) {
            (Some(f), _) => Some((format!("--{name}"), f.to_owned())),
            (None, Some(v)) => Some((self.at(v, &name.replace('-', "_")), v.get_ref().clone())),
            (None, None) => None,
        }
    }

    /// A required address (`host:port`, resolved): the flag `--name`, else the file's.
    pub(crate) fn address(
        &self,
        flag: Option<&str>,
        name: &str,
        file: Option<&Text>,
    ) -> Result<SocketAddr, String> {
        let (what, spec) = self.pick(flag, name, file).ok_or_else(|| missing(name))?;
        resolve(&what, &spec, None)
    }

    /// A socket toward a peer: its bind address (optional: `(flag, name, file)`) and the
    /// peer's (required), resolved in the same family.
    pub(crate) fn toward(
        &self,
        bind: (Option<&str>, &str, Option<&Text>),
        peer: (Option<&str>, &str, Option<&Text>),
    ) -> Result<(SocketAddr, SocketAddr), String> {
        let (what, spec) = self
            .pick(peer.0, peer.1, peer.2)
            .ok_or_else(|| missing(peer.1))?;
        let b = self.pick(bind.0, bind.1, bind.2);
        let flag = format!("--{}", bind.1);
        let b = b.as_ref().map_or((flag.as_str(), None), |(w, b)| {
            (w.as_str(), Some(b.as_str()))
        });
        bind_and_peer(b, (&what, &spec))
    }

    /// A required public key: the flag, else the file's `name`.
    pub(crate) fn key(
        &self,
        flag: Option<PublicKey>,
        name: &str,
        file: Option<&Text>,
    ) -> Result<PublicKey, String> {
        match (flag, file) {
            (Some(k), _) => Ok(k),
            (None, Some(k)) => self.parse(k, &name.replace('-', "_")),
            (None, None) => Err(missing(name)),
        }
    }

    /// The trunk's far end of an edge or tcm-local: (bind, peer, its key), flags over the
    /// file; warns about a credential this build does not present yet.
    pub(crate) fn trunk_peer(
        &self,
        flags: &TrunkPeerArgs,
        file: TrunkPeerFile<'_>,
    ) -> Result<(SocketAddr, SocketAddr, PublicKey), String> {
        let (bind, peer) = self.toward(
            (flags.trunk_bind.as_deref(), "trunk-bind", file.trunk_bind),
            (
                flags.server_gateway.as_deref(),
                "server-gateway",
                file.server_gateway,
            ),
        )?;
        let key = self.key(flags.server_gateway_key, "server-gateway-key", file.key)?;
        if file.credential_file.is_some() {
            warn_not_enforced("credential_file");
        }
        Ok((bind, peer, key))
    }

    /// A path from the file, relative to the file's directory.
    pub(crate) fn path(&self, p: &Path) -> PathBuf {
        match self.path.as_deref().and_then(Path::parent) {
            Some(dir) if p.is_relative() => dir.join(p),
            _ => p.to_owned(),
        }
    }

    /// Parses a value from the file, naming its place on error.
    pub(crate) fn parse<V>(&self, v: &Text, key: &str) -> Result<V, String>
    where
        V: std::str::FromStr,
        V::Err: std::fmt::Display,
    {
        v.get_ref()
            .parse()
            .map_err(|e| format!("{} = {:?}: {e}", self.at(v, key), v.get_ref()))
    }
}

/// One allowed trunk peer, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Peer {
    /// Its number (unique; the credential names it).
    pub(crate) id: u32,
    /// Its name, for logs and metrics (unique).
    pub(crate) name: String,
    /// The player addresses it may speak for (TCM restores a packet only from these).
    pub(crate) prefixes: Vec<Cidr>,
}

/// Trunk admission at a server gateway or tcm-remote: who may open a trunk. Read and checked
/// here; enforcing it is the admission work's (issue 25, item 1).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Admission {
    /// The operator's key file (signs the peers' trunk credentials).
    pub(crate) operator_key_file: Option<PathBuf>,
    /// The allowed peers.
    pub(crate) peers: Vec<Peer>,
    /// TCM: restore packets from any source (no prefix check).
    pub(crate) accept_any_source: bool,
}

impl Admission {
    /// Reads the admission settings of a server-side file.
    pub(crate) fn read<T>(
        l: &Loaded<T>,
        operator_key_file: Option<&Path>,
        accept_any_source: Option<bool>,
        entries: &[PeerEntry],
    ) -> Result<Self, String> {
        let mut ids = BTreeSet::new();
        let mut names = BTreeSet::new();
        let mut peers = Vec::with_capacity(entries.len());
        for e in entries {
            if !ids.insert(e.id) || !names.insert(e.name.as_str()) {
                let where_ = l.path.as_deref().unwrap_or(Path::new("-")).display();
                return Err(format!(
                    "{where_}: [[peer]] id {} name {:?}: ids and names must be unique",
                    e.id, e.name
                ));
            }
            let prefixes = e
                .prefixes
                .iter()
                .map(|p| l.parse(p, "prefixes"))
                .collect::<Result<_, _>>()?;
            peers.push(Peer {
                id: e.id,
                name: e.name.clone(),
                prefixes,
            });
        }
        Ok(Self {
            operator_key_file: operator_key_file.map(|p| l.path(p)),
            peers,
            accept_any_source: accept_any_source.unwrap_or(false),
        })
    }

    /// Whether anything is configured.
    pub(crate) fn is_set(&self) -> bool {
        *self != Self::default()
    }
}

/// A required value missing from both the flags and the file.
pub(crate) fn missing(flag: &str) -> String {
    format!(
        "missing --{flag} (or `{}` in the --config file)",
        flag.replace('-', "_")
    )
}

/// Says that admission settings were read but this build does not enforce them yet.
pub(crate) fn warn_not_enforced(what: &str) {
    eprintln!(
        "warning: {what} read from the configuration file, but trunk admission is not \
         enforced by this build: any peer holding this gateway's public key can open a trunk"
    );
}

#[cfg(test)]
mod tests;
