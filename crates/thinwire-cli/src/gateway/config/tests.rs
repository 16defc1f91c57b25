use std::path::Path;

use proptest::prelude::*;
use thinwire_gateway::run::{save_credential, Cidr};
use thinwire_gateway::trunk::{mint_trunk_credential, CredentialSpec};
use thinwire_proto::PublicKey;

use super::*;

fn flags(operator_key_file: Option<&str>, peers: &[&str]) -> AdmissionArgs {
    AdmissionArgs {
        operator_key_file: operator_key_file.map(PathBuf::from),
        peers: peers.iter().map(|p| p.parse().expect("a peer")).collect(),
    }
}

fn file_admission<'a>(
    operator_key_file: Option<&'a PathBuf>,
    peers: &'a [PeerEntry],
) -> AdmissionFile<'a> {
    AdmissionFile {
        operator_key_file,
        peers,
    }
}

fn example(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../docs/examples/gateway")
        .join(name)
}

fn write(name: &str, text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tw-gw-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p
}

#[test]
fn the_edge_example_parses() {
    let l = load::<EdgeFile>(Some(&example("edge.toml"))).expect("parses");
    let f = &l.file;
    let (what, addr) = l
        .pick(None, "server-gateway", f.server_gateway.as_ref())
        .expect("set");
    assert_eq!(addr, "gw.example.net:7100");
    assert!(what.ends_with("edge.toml:20: server_gateway"), "{what}");
    assert_eq!(
        l.path(f.credential_file.as_deref().expect("credential")),
        example("edge.cred")
    );
    assert_eq!(f.players_token_key_file, None);
    let _: PublicKey = l
        .parse(f.server_gateway_key.as_ref().expect("key"), "k")
        .expect("hex");
    assert_eq!(f.limits.max_flows, Some(4096));
    assert_eq!(
        l.path(f.key_file.as_deref().expect("key file")),
        example("edge.key")
    );
    assert_eq!(
        f.metrics.as_ref().map(|m| m.get_ref().as_str()),
        Some("127.0.0.1:9100")
    );
}

#[test]
fn the_server_example_parses_with_its_peers() {
    let l = load::<ServerFile>(Some(&example("server.toml"))).expect("parses");
    let f = &l.file;
    let a = Admission::read(
        &l,
        &flags(None, &["3:lab"]),
        file_admission(f.operator_key_file.as_ref(), &f.peer),
    )
    .expect("checks");
    assert_eq!(a.peers.len(), 3, "the file's peers, then the flag's");
    assert_eq!(a.peers[0].name, "eu-west");
    assert_eq!(a.peers[1].max_flows, Some(1024));
    assert_eq!((a.peers[2].id, a.peers[2].name.as_str()), (3, "lab"));
    assert_eq!(a.operator_key_file, example("operator.key"));
    assert_eq!(
        f.upstream_token_key_file.as_deref().map(|p| l.path(p)),
        Some(example("game-server-token.key"))
    );
    let _: PublicKey = l
        .parse(f.game_server_key.as_ref().expect("key"), "k")
        .expect("hex");
}

#[test]
fn the_tcm_examples_parse() {
    let l = load::<TcmLocalFile>(Some(&example("tcm-local.toml"))).expect("parses");
    assert_eq!(l.file.period_ms, Some(25));
    assert!(l.file.credential_file.is_some() && l.file.server_gateway.is_none());
    let routes = l.file.tun.routes.as_ref().expect("routes");
    let _: Cidr = l.parse(&routes[0], "routes").expect("cidr");
    let r = load::<TcmRemoteFile>(Some(&example("tcm-remote.toml"))).expect("parses");
    let a = Admission::read(
        &r,
        &flags(None, &[]),
        file_admission(r.file.operator_key_file.as_ref(), &r.file.peer),
    )
    .expect("checks");
    assert_eq!(a.peers[0].id, 1);
    assert_eq!(
        a.peers[0].prefixes,
        vec!["10.1.0.0/24".parse().expect("cidr")]
    );
    assert_eq!(r.file.accept_any_source, Some(false));
    let _: Cidr = r
        .parse(r.file.tun.address.as_ref().expect("address"), "address")
        .expect("cidr");
}

#[test]
fn unknown_keys_and_bad_values_name_the_file_and_line() {
    let p = write(
        "unknown.toml",
        "listen = \"0.0.0.0:1\"\n\nlisten_port = 7\n",
    );
    let e = load::<EdgeFile>(Some(&p)).expect_err("unknown key");
    assert!(
        e.starts_with(&format!("{}:3: unknown field `listen_port`", p.display())),
        "{e}"
    );
    let p = write("nested.toml", "key_file = \"k\"\n[limits]\nmax_flow = 3\n");
    let e = load::<ServerFile>(Some(&p)).expect_err("unknown nested key");
    assert!(e.starts_with(&format!("{}:3:", p.display())), "{e}");
    let p = write(
        "peer.toml",
        "[[peer]]\nid = 1\nname = \"a\"\nprefixes = [\"10.0.0.0/33\"]\n",
    );
    let l = load::<TcmRemoteFile>(Some(&p)).expect("parses");
    let e = Admission::read(
        &l,
        &flags(Some("op"), &[]),
        file_admission(None, &l.file.peer),
    )
    .expect_err("bad prefix");
    assert!(
        e.starts_with(&format!("{}:4: prefixes", p.display())),
        "{e}"
    );
    let p = write(
        "dup.toml",
        "[[peer]]\nid = 1\nname = \"a\"\n[[peer]]\nid = 1\nname = \"b\"\n",
    );
    let l = load::<ServerFile>(Some(&p)).expect("parses");
    let e = Admission::read(
        &l,
        &flags(Some("op"), &[]),
        file_admission(None, &l.file.peer),
    )
    .expect_err("duplicate id");
    assert!(e.contains("unique"), "{e}");
    let p = write("dup2.toml", "[[peer]]\nid = 1\nname = \"a\"\n");
    let l = load::<ServerFile>(Some(&p)).expect("parses");
    let dup = flags(Some("op"), &["2:a"]);
    let e = Admission::read(&l, &dup, file_admission(None, &l.file.peer)).expect_err("name");
    assert!(e.contains("--peer"), "{e}");
    let e = Admission::read(&l, &flags(None, &[]), file_admission(None, &l.file.peer))
        .expect_err("no operator key");
    assert!(e.starts_with("missing --operator-key-file"), "{e}");
    let e = load::<EdgeFile>(Some(Path::new("/no/such/edge.toml"))).expect_err("missing");
    assert!(e.starts_with("/no/such/edge.toml: "), "{e}");
}

#[test]
fn flags_win_over_the_file() {
    let p = write("flags.toml", "listen = \"0.0.0.0:1\"\n");
    let l = load::<EdgeFile>(Some(&p)).expect("parses");
    let f = l.pick(Some("127.0.0.1:2"), "listen", l.file.listen.as_ref());
    assert_eq!(f, Some(("--listen".into(), "127.0.0.1:2".into())));
    let none = load::<EdgeFile>(None).expect("no file");
    assert_eq!(none.pick(None, "listen", none.file.listen.as_ref()), None);
}

fn trunk_flags(
    credential: Option<&Path>,
    server_gateway: Option<&str>,
    key: Option<PublicKey>,
) -> TrunkPeerArgs {
    TrunkPeerArgs {
        credential: credential.map(Path::to_owned),
        server_gateway: server_gateway.map(str::to_owned),
        server_gateway_key: key,
        trunk_bind: None,
    }
}

#[test]
fn an_edge_needs_a_credential_and_dials_its_address_unless_told_otherwise() {
    let gw_key = PublicKey([7; 32]);
    let c = mint_trunk_credential(
        &TokenKey::new([1; 32]),
        &CredentialSpec {
            peer_id: 2,
            name: "edge-2",
            server_gateway_key: &gw_key,
            addresses: &["127.0.0.1:7100".parse().expect("addr")],
            expires_unix_s: 4_000_000_000,
        },
        [3; 24],
    )
    .expect("minted");
    let cred = write("edge-2.cred", "");
    std::fs::remove_file(&cred).expect("rm");
    save_credential(&cred, &c).expect("saved");
    let l = load::<EdgeFile>(None).expect("no file");
    let e = l
        .trunk_peer(&trunk_flags(None, None, None), l.file.peer())
        .expect_err("no credential");
    assert!(
        e.starts_with("missing --credential (or `credential_file`"),
        "{e}"
    );
    let end = l
        .trunk_peer(&trunk_flags(Some(&cred), None, Some(gw_key)), l.file.peer())
        .expect("the credential's address");
    assert_eq!((end.credential.peer, end.server_gateway), (2, None));
    assert_eq!(end.bind, "0.0.0.0:0".parse().expect("addr"));
    let end = l
        .trunk_peer(
            &trunk_flags(Some(&cred), Some("localhost:7200"), None),
            l.file.peer(),
        )
        .expect("an override");
    assert_eq!(end.server_gateway.map(|a| a.port()), Some(7200));
    let e = l
        .trunk_peer(
            &trunk_flags(Some(&cred), None, Some(PublicKey([8; 32]))),
            l.file.peer(),
        )
        .expect_err("another key");
    assert!(e.starts_with("--server-gateway-key "), "{e}");
    let p = write(
        "edge-cred.toml",
        &format!(
            "credential_file = \"edge-2.cred\"\nserver_gateway_key = \"{}\"\n",
            PublicKey([9; 32])
        ),
    );
    let l = load::<EdgeFile>(Some(&p)).expect("parses");
    let e = l
        .trunk_peer(&trunk_flags(None, None, None), l.file.peer())
        .expect_err("the file's key is checked");
    assert!(e.contains(":2: server_gateway_key"), "{e}");
}

proptest! {
    /// Any text is either a configuration or an error that names the file and a line in it.
    #[test]
    fn any_text_loads_or_names_its_line(text in "[a-z_=\"\\[\\]0-9.:/ \n]{0,120}") {
        let p = write("prop.toml", &text);
        match load::<ServerFile>(Some(&p)) {
            Ok(_) => {}
            Err(e) => {
                let rest = e.strip_prefix(&format!("{}:", p.display())).expect("names the file");
                let line: usize = rest.split(':').next().and_then(|n| n.parse().ok()).expect("a line");
                prop_assert!(line >= 1 && line <= text.lines().count().max(1) + 1, "{e}");
            }
        }
    }
}
