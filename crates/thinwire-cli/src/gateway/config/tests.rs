use std::path::Path;

use proptest::prelude::*;
use thinwire_proto::PublicKey;

use super::*;

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
    assert!(what.ends_with("edge.toml:13: server_gateway"), "{what}");
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
        f.operator_key_file.as_deref(),
        f.accept_any_source,
        &f.peer,
    )
    .expect("checks");
    assert_eq!(a.peers.len(), 2);
    assert_eq!(a.peers[0].name, "eu-west");
    assert_eq!(
        a.peers[0].prefixes,
        vec!["10.1.0.0/24".parse().expect("cidr")]
    );
    assert!(!a.accept_any_source && a.is_set());
    assert_eq!(a.operator_key_file, Some(example("operator.key")));
    let _: PublicKey = l
        .parse(f.game_server_key.as_ref().expect("key"), "k")
        .expect("hex");
}

#[test]
fn the_tcm_examples_parse() {
    let l = load::<TcmLocalFile>(Some(&example("tcm-local.toml"))).expect("parses");
    assert_eq!(l.file.period_ms, Some(25));
    let routes = l.file.tun.routes.as_ref().expect("routes");
    let _: Cidr = l.parse(&routes[0], "routes").expect("cidr");
    let r = load::<TcmRemoteFile>(Some(&example("tcm-remote.toml"))).expect("parses");
    let a = Admission::read(
        &r,
        r.file.operator_key_file.as_deref(),
        r.file.accept_any_source,
        &r.file.peer,
    )
    .expect("checks");
    assert_eq!(a.peers[0].id, 1);
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
    let e = Admission::read(&l, None, None, &l.file.peer).expect_err("bad prefix");
    assert!(
        e.starts_with(&format!("{}:4: prefixes", p.display())),
        "{e}"
    );
    let p = write(
        "dup.toml",
        "[[peer]]\nid = 1\nname = \"a\"\n[[peer]]\nid = 1\nname = \"b\"\n",
    );
    let l = load::<ServerFile>(Some(&p)).expect("parses");
    let e = Admission::read(&l, None, None, &l.file.peer).expect_err("duplicate id");
    assert!(e.contains("unique"), "{e}");
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
