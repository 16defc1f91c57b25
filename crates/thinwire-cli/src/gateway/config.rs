//! The configuration file of each gateway role (`--config FILE`, TOML): everything the flags
//! say, among them the trunk admission settings (the operator key and the admitted peers at
//! a server gateway or tcm-remote, the trunk credential at an edge or tcm-local). Flags
//! override the file (`[[peer]]`s and `--peer`s add up); an unknown key is an error naming the file and
//! line. Relative paths in a file are relative to the file's directory. Commented examples:
//! `docs/examples/gateway/`.

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Deserialize;
use thinwire_gateway::run::{load_credential, load_or_create_operator_key};
use thinwire_gateway::trunk::{TrunkCredential, TrunkPeer};
use thinwire_proto::{PublicKey, TokenKey};
use toml::Spanned;

use super::addr::{bind_and_peer, resolve};
use super::{AdmissionArgs, TrunkPeerArgs};

/// A value that is parsed after reading (an address, a key, a prefix), with its place.
pub(crate) type Text = Spanned<String>;

/// Bounds of an edge or server gateway (`[limits]`).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Limits {
    pub(crate) max_flows: Option<usize>,
    pub(crate) max_flow_backlog: Option<usize>,
    pub(crate) max_held: Option<usize>,
    pub(crate) players_per_source: Option<usize>,
}

/// One allowed trunk peer of a server gateway or tcm-remote (`[[peer]]`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PeerEntry {
    pub(crate) id: u64,
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) prefixes: Vec<Text>,
    pub(crate) max_flows: Option<usize>,
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

/// `admission()` of a file with admission settings.
macro_rules! admission_file {
    ($t:ty) => {
        impl $t {
            /// The admission settings.
            pub(crate) fn admission(&self) -> AdmissionFile<'_> {
                AdmissionFile {
                    operator_key_file: self.operator_key_file.as_ref(),
                    peers: &self.peer,
                }
            }
        }
    };
}
admission_file!(ServerFile);
admission_file!(TcmRemoteFile);

role_file! {
    /// `edge.toml`.
    EdgeFile {
        listen: Option<Text>,
        server_gateway: Option<Text>,
        server_gateway_key: Option<Text>,
        trunk_bind: Option<Text>,
        credential_file: Option<PathBuf>,
        players_token_key_file: Option<PathBuf>,
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
        upstream_token_key_file: Option<PathBuf>,
        upstream_token_lifetime_s: Option<f64>,
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
        self.bind_toward(bind, (&what, &spec))
    }

    /// [`toward`](Self::toward) a peer already named: `(what, host:port)`.
    fn bind_toward(
        &self,
        bind: (Option<&str>, &str, Option<&Text>),
        peer: (&str, &str),
    ) -> Result<(SocketAddr, SocketAddr), String> {
        let b = self.pick(bind.0, bind.1, bind.2);
        let flag = format!("--{}", bind.1);
        let b = b.as_ref().map_or((flag.as_str(), None), |(w, b)| {
            (w.as_str(), Some(b.as_str()))
        });
        bind_and_peer(b, peer)
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

    /// The trunk's far end of an edge or tcm-local, flags over the file: its credential
    /// (required), the address to dial (the credential's, unless `server_gateway` is given),
    /// the trunk socket's bind address. A `server_gateway_key` given must be the
    /// credential's.
    pub(crate) fn trunk_peer(
        &self,
        flags: &TrunkPeerArgs,
        file: TrunkPeerFile<'_>,
    ) -> Result<TrunkEnd, String> {
        let path = match (&flags.credential, file.credential_file) {
            (Some(p), _) => p.clone(),
            (None, Some(p)) => self.path(p),
            (None, None) => {
                return Err(format!(
                    "{}: the server gateway admits a trunk only with a credential from its \
                     operator (`thinwire gateway credential`)",
                    missing("credential").replace("`credential`", "`credential_file`")
                ))
            }
        };
        let credential = load_credential(&path).map_err(|e| e.to_string())?;
        let token_key = PublicKey(credential.token.server_key());
        let key = match (flags.server_gateway_key, file.key) {
            (Some(k), _) => Some(("--server-gateway-key".to_owned(), k)),
            (None, Some(k)) => Some((
                self.at(k, "server_gateway_key"),
                self.parse(k, "server_gateway_key")?,
            )),
            (None, None) => None,
        };
        if let Some((what, k)) = key.filter(|(_, k)| *k != token_key) {
            return Err(format!(
                "{what} {k}: the credential {} is for the server gateway key {token_key}",
                path.display()
            ));
        }
        let over = self.pick(
            flags.server_gateway.as_deref(),
            "server-gateway",
            file.server_gateway,
        );
        let first = credential.token.addresses().first().copied();
        let (what, spec) = match (&over, first) {
            (Some((w, a)), _) => (w.clone(), a.clone()),
            (None, Some(a)) => (format!("credential {}", path.display()), a.to_string()),
            (None, None) => return Err(format!("{}: lists no address", path.display())),
        };
        let bind = (flags.trunk_bind.as_deref(), "trunk-bind", file.trunk_bind);
        let (bind, peer) = self.bind_toward(bind, (&what, &spec))?;
        Ok(TrunkEnd {
            bind,
            server_gateway: over.map(|_| peer),
            credential,
        })
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

/// The trunk's far end of an edge or tcm-local.
#[derive(Debug)]
pub(crate) struct TrunkEnd {
    /// The trunk socket's local address.
    pub(crate) bind: SocketAddr,
    /// The address to dial instead of the credential's (given as `server_gateway`).
    pub(crate) server_gateway: Option<SocketAddr>,
    /// The credential presented.
    pub(crate) credential: TrunkCredential,
}

/// The admission settings in a server gateway's or tcm-remote's file.
pub(crate) struct AdmissionFile<'a> {
    pub(crate) operator_key_file: Option<&'a PathBuf>,
    pub(crate) peers: &'a [PeerEntry],
}

/// Trunk admission at a server gateway or tcm-remote: the operator key the credentials are
/// minted with and the peers admitted (the file's `[[peer]]`s, then the `--peer`s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Admission {
    /// The operator key file (created when missing).
    pub(crate) operator_key_file: PathBuf,
    /// The admitted peers (ids and names unique).
    pub(crate) peers: Vec<TrunkPeer>,
}

impl Admission {
    /// Reads the admission settings, flags and file together.
    pub(crate) fn read<T>(
        l: &Loaded<T>,
        flags: &AdmissionArgs,
        file: AdmissionFile<'_>,
    ) -> Result<Self, String> {
        let mut peers = Vec::with_capacity(file.peers.len() + flags.peers.len());
        for e in file.peers {
            let prefixes = e
                .prefixes
                .iter()
                .map(|p| l.parse(p, "prefixes"))
                .collect::<Result<_, _>>()?;
            peers.push(TrunkPeer {
                prefixes,
                max_flows: e.max_flows,
                ..TrunkPeer::new(e.id, &e.name)
            });
        }
        peers.extend(flags.peers.iter().cloned());
        let (mut ids, mut names) = (BTreeSet::new(), BTreeSet::new());
        for p in &peers {
            if !ids.insert(p.id) || !names.insert(p.name.as_str()) {
                let where_ = l.path.as_deref().unwrap_or(Path::new("-")).display();
                return Err(format!(
                    "{where_}: peer id {} name {:?}: ids and names must be unique \
                     ([[peer]] and --peer together)",
                    p.id, p.name
                ));
            }
        }
        let operator_key_file = match (&flags.operator_key_file, file.operator_key_file) {
            (Some(p), _) => p.clone(),
            (None, Some(p)) => l.path(p),
            (None, None) => return Err(missing("operator-key-file")),
        };
        if peers.is_empty() {
            eprintln!("warning: no peer admitted (no [[peer]] nor --peer): every trunk is refused");
        }
        Ok(Self {
            operator_key_file,
            peers,
        })
    }

    /// The operator key (created when its file is missing).
    pub(crate) fn operator_key(&self) -> Result<TokenKey, String> {
        load_or_create_operator_key(&self.operator_key_file).map_err(|e| e.to_string())
    }
}

/// A required value missing from both the flags and the file.
pub(crate) fn missing(flag: &str) -> String {
    format!(
        "missing --{flag} (or `{}` in the --config file)",
        flag.replace('-', "_")
    )
}

#[cfg(test)]
mod tests;
