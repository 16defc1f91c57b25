//! Import of packet timing and payload sizes from a pcap file.

use std::path::Path;
use std::time::Duration;

use etherparse::{SlicedPacket, TransportSlice};
use pcap_file::pcap::PcapReader;
use pcap_file::DataLink;

use super::replay::TraceRow;
use super::Direction;
use crate::error::LabError;

/// How to turn captured packets into messages.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PcapOptions {
    /// The server's port: packets from it are `down`, packets to it `up`,
    /// others are skipped. Without it every packet is `down`.
    pub server_port: Option<u16>,
    /// Class name of the imported messages (default `"pcap"`).
    pub class: Option<String>,
}

/// Reads a pcap file and returns one row per UDP datagram or TCP segment that
/// carries payload (pure TCP acknowledgements and non-IP frames are skipped),
/// with times relative to the first packet. Errors name the file and the
/// 1-based packet number.
pub fn load_pcap(path: &Path, opts: &PcapOptions) -> Result<Vec<TraceRow>, LabError> {
    let file = std::fs::File::open(path).map_err(|e| LabError::io(path, e))?;
    let perr = |n: usize, msg: String| LabError::Input {
        path: path.to_owned(),
        location: if n == 0 {
            "header".into()
        } else {
            format!("packet {n}")
        },
        msg,
    };
    let mut reader = PcapReader::new(std::io::BufReader::new(file))
        .map_err(|e| perr(0, format!("not a pcap file: {e}")))?;
    let datalink = reader.header().datalink;
    let class = opts.class.clone().unwrap_or_else(|| "pcap".into());
    let mut rows = Vec::new();
    let mut first: Option<Duration> = None;
    let mut last = Duration::ZERO;
    let mut n = 0usize;
    while let Some(pkt) = reader.next_packet() {
        n += 1;
        let pkt = pkt.map_err(|e| perr(n, format!("truncated or corrupt record: {e}")))?;
        let sliced = match datalink {
            DataLink::ETHERNET => SlicedPacket::from_ethernet(&pkt.data),
            DataLink::LINUX_SLL => SlicedPacket::from_linux_sll(&pkt.data),
            DataLink::RAW | DataLink::IPV4 | DataLink::IPV6 => SlicedPacket::from_ip(&pkt.data),
            other => {
                return Err(perr(
                    n,
                    format!("unsupported link type {other:?} (need Ethernet, Linux SLL or raw IP)"),
                ))
            }
        };
        let sliced = match sliced {
            Ok(s) => s,
            Err(e) => return Err(perr(n, format!("cannot parse packet: {e}"))),
        };
        let (payload, src, dst) = match &sliced.transport {
            Some(TransportSlice::Udp(u)) => {
                (u.payload().len(), u.source_port(), u.destination_port())
            }
            Some(TransportSlice::Tcp(t)) => {
                (t.payload().len(), t.source_port(), t.destination_port())
            }
            _ => continue,
        };
        if payload == 0 {
            continue;
        }
        let dir = match opts.server_port {
            None => Direction::Down,
            Some(p) if src == p => Direction::Down,
            Some(p) if dst == p => Direction::Up,
            Some(_) => continue,
        };
        let t0 = *first.get_or_insert(pkt.timestamp);
        let at = pkt.timestamp.saturating_sub(t0);
        if at < last {
            return Err(perr(n, "timestamp goes backwards".into()));
        }
        last = at;
        rows.push(TraceRow {
            at,
            dir,
            size: payload as u32,
            class: class.clone(),
            deadline: None,
        });
    }
    if rows.is_empty() {
        return Err(perr(n, "no UDP or TCP packets with payload".into()));
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use etherparse::PacketBuilder;
    use pcap_file::pcap::{PcapPacket, PcapWriter};

    fn udp_frame(src: u16, dst: u16, len: usize) -> Vec<u8> {
        let b = PacketBuilder::ethernet2([1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .udp(src, dst);
        let payload = vec![0xabu8; len];
        let mut out = Vec::with_capacity(b.size(len));
        b.write(&mut out, &payload).expect("write");
        out
    }

    fn tcp_frame(src: u16, dst: u16, len: usize) -> Vec<u8> {
        let b = PacketBuilder::ethernet2([1, 2, 3, 4, 5, 6], [6, 5, 4, 3, 2, 1])
            .ipv4([10, 0, 0, 1], [10, 0, 0, 2], 64)
            .tcp(src, dst, 1000, 65535);
        let payload = vec![0x11u8; len];
        let mut out = Vec::with_capacity(b.size(len));
        b.write(&mut out, &payload).expect("write");
        out
    }

    fn write_pcap(path: &Path, frames: &[(u64, Vec<u8>)]) {
        let file = std::fs::File::create(path).expect("create");
        let mut w = PcapWriter::new(file).expect("writer");
        for (ms, data) in frames {
            let p = PcapPacket::new(
                Duration::from_millis(1_000_000 + ms),
                data.len() as u32,
                data,
            );
            w.write_packet(&p).expect("write packet");
        }
    }

    #[test]
    fn imports_udp_and_tcp_payload_sizes_and_times() {
        let dir = std::env::temp_dir().join(format!("thinwire-lab-pcap-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("tmp");
        let path = dir.join("game.pcap");
        write_pcap(
            &path,
            &[
                (0, udp_frame(5000, 7777, 40)),
                (30, udp_frame(7777, 5000, 120)),
                (45, tcp_frame(7777, 5000, 0)), // pure ack: skipped
                (60, tcp_frame(7777, 5000, 77)),
                (70, udp_frame(1234, 4321, 10)), // other flow: skipped
            ],
        );
        let rows = load_pcap(
            &path,
            &PcapOptions {
                server_port: Some(7777),
                class: None,
            },
        )
        .expect("valid pcap");
        let got: Vec<(u128, Direction, u32)> = rows
            .iter()
            .map(|r| (r.at.as_millis(), r.dir, r.size))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, Direction::Up, 40),
                (30, Direction::Down, 120),
                (60, Direction::Down, 77)
            ]
        );
        assert!(rows.iter().all(|r| r.class == "pcap"));

        // A file that is not a pcap.
        let bad = dir.join("bad.pcap");
        std::fs::write(&bad, b"hello, this is not a capture").expect("write");
        let e = load_pcap(&bad, &PcapOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("bad.pcap") && e.contains("header"), "{e}");

        // A truncated record.
        let mut bytes = std::fs::read(&path).expect("read");
        bytes.truncate(bytes.len() - 5);
        let trunc = dir.join("trunc.pcap");
        std::fs::write(&trunc, &bytes).expect("write");
        let e = load_pcap(&trunc, &PcapOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("trunc.pcap:packet 5"), "{e}");
        std::fs::remove_dir_all(&dir).ok();
    }
}
