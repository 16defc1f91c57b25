//! [`ProtocolSpec`]: a transport to compare, named as in scenario files and results.

use super::thinwire::{COPY_FIRST_SUFFIX, INSECURE_SUFFIX, SHARDS_INFIX};
use super::{DeadlineParity, Mapping, Protocol, TcpVariant, ThinwireProtocol};

/// A transport to compare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProtocolSpec {
    /// The TCP NewReno model.
    TcpModel,
    /// A named variant of the TCP model other than `tcp-model`
    /// (`tcp-model-linux`, `tcp-model-linux-2.6.23`, `tcp-model-thin`,
    /// `tcp-model-linear-rto`, `tcp-model-windows`).
    TcpVariant(TcpVariant),
    /// The plain UDP model.
    UdpModel,
    /// The SCTP model (one ordered reliable stream, ns-2 defaults).
    SctpModel,
    /// The DCCP model with CCID 2.
    DccpModel,
    /// Wu et al.'s P_MRO, P_MR or P_M built from TCP-model streams
    /// (`tcp-pmro`, `tcp-pmr`, `tcp-pm`; see [`super::TcpStreams`]).
    TcpStreams(Mapping),
    /// thinwire itself, in a configuration.
    Thinwire(ThinwireProtocol),
}

/// Largest `N` of the `thinwire-fec+N` configurations.
pub const MAX_FIXED_PARITY: u8 = 8;

impl ProtocolSpec {
    /// Every accepted protocol name (`thinwire-fec+N` is accepted for `N` in
    /// `1..=`[`MAX_FIXED_PARITY`], and every thinwire name with the suffix
    /// `-insecure-cleartext`).
    pub const NAMES: &'static [&'static str] = &[
        "tcp-model",
        "tcp-model-linux",
        "tcp-model-linux-ts",
        "tcp-model-linux-2.6.23",
        "tcp-model-thin",
        "tcp-model-linear-rto",
        "tcp-model-windows",
        "udp-model",
        "sctp-model",
        "dccp-model",
        "tcp-pmro",
        "tcp-pmr",
        "tcp-pm",
        "thinwire",
        "thinwire-thin-off",
        "thinwire-all-ordered",
        "thinwire-reliable-unordered",
        "thinwire-full-mapping",
        "thinwire-pmro",
        "thinwire-pmr",
        "thinwire-pm",
        "thinwire-deadline",
        "thinwire-rtx-only",
        "thinwire-fec+1",
        "thinwire-fec+2",
        "thinwire-fec+3",
        "thinwire-deadline-k2",
        "thinwire-copy-first",
        "thinwire-insecure-cleartext",
    ];

    /// Parses a protocol name.
    ///
    /// The deadline configurations (`thinwire-deadline`, `thinwire-rtx-only`,
    /// `thinwire-fec+N`) are `thinwire` (thin-stream features on, one ordered
    /// channel) whose messages with a deadline go through deadline delivery
    /// with adaptive parity, no parity, or `N` parity shards per stage.
    ///
    /// A deadline configuration's name followed by `-kN` (`N` in `1..=64`,
    /// e.g. `thinwire-deadline-k2`, `thinwire-fec+3-k2`) cuts every deadline
    /// message into `N` data shards instead of 512-byte ones.
    ///
    /// A thinwire configuration with its thin-stream features on and without
    /// deadline delivery, followed by `-copy-first` (e.g. `thinwire-copy-first`),
    /// gives its reliable channels the one-round-trip tail target
    /// [`COPY_FIRST_TARGET`](super::COPY_FIRST_TARGET), met with copies of first
    /// transmissions. (Repair works only while a stream is thin, so
    /// `thinwire-thin-off-copy-first` would copy nothing and is refused.)
    ///
    /// Every thinwire configuration encrypts its packets, as thinwire always
    /// does; the same name ending in `-insecure-cleartext` (e.g.
    /// `thinwire-insecure-cleartext`, `thinwire-fec+2-insecure-cleartext`) is
    /// the explicit opt-out, for measuring what encryption costs.
    pub fn parse(name: &str) -> Option<ProtocolSpec> {
        if let Some(base) = name.strip_suffix(INSECURE_SUFFIX) {
            return Self::thinwire_variant(base, |t| {
                (!t.insecure_cleartext).then_some(ThinwireProtocol {
                    insecure_cleartext: true,
                    ..t
                })
            });
        }
        if let Some(base) = name.strip_suffix(COPY_FIRST_SUFFIX) {
            return Self::thinwire_variant(base, |t| {
                (t.thin && t.deadline.is_none() && !t.copy_first && !t.insecure_cleartext)
                    .then_some(ThinwireProtocol {
                        copy_first: true,
                        ..t
                    })
            });
        }
        if let Some((base, k)) = name.rsplit_once(SHARDS_INFIX) {
            // Plain decimal digits only (no sign, no leading zero), 1..=64.
            let k = (!k.starts_with('0') && k.bytes().all(|b| b.is_ascii_digit()))
                .then(|| k.parse::<u8>().ok())
                .flatten()
                .filter(|k| (1..=64).contains(k))?;
            return Self::thinwire_variant(base, |t| {
                (t.deadline.is_some() && t.deadline_shards.is_none() && !t.insecure_cleartext)
                    .then_some(ThinwireProtocol {
                        deadline_shards: Some(k),
                        ..t
                    })
            });
        }
        let tw = |thin: bool, mapping: Mapping, deadline: Option<DeadlineParity>| {
            ProtocolSpec::Thinwire(ThinwireProtocol {
                thin,
                mapping,
                deadline,
                deadline_shards: None,
                insecure_cleartext: false,
                copy_first: false,
            })
        };
        Some(match name {
            "tcp-model" => ProtocolSpec::TcpModel,
            "tcp-model-linux"
            | "tcp-model-linux-ts"
            | "tcp-model-linux-2.6.23"
            | "tcp-model-thin"
            | "tcp-model-linear-rto"
            | "tcp-model-windows" => ProtocolSpec::TcpVariant(TcpVariant::parse(name)?),
            "udp-model" => ProtocolSpec::UdpModel,
            "sctp-model" => ProtocolSpec::SctpModel,
            "dccp-model" => ProtocolSpec::DccpModel,
            "tcp-pmro" => ProtocolSpec::TcpStreams(Mapping::Pmro),
            "tcp-pmr" => ProtocolSpec::TcpStreams(Mapping::Pmr),
            "tcp-pm" => ProtocolSpec::TcpStreams(Mapping::Pm),
            "thinwire" => tw(true, Mapping::SingleOrdered, None),
            "thinwire-thin-off" => tw(false, Mapping::SingleOrdered, None),
            "thinwire-all-ordered" => tw(true, Mapping::AllOrdered, None),
            "thinwire-reliable-unordered" => tw(true, Mapping::ReliableUnordered, None),
            "thinwire-full-mapping" => tw(true, Mapping::FullMapping, None),
            "thinwire-pmro" => tw(true, Mapping::Pmro, None),
            "thinwire-pmr" => tw(true, Mapping::Pmr, None),
            "thinwire-pm" => tw(true, Mapping::Pm, None),
            "thinwire-deadline" => tw(true, Mapping::SingleOrdered, Some(DeadlineParity::Adaptive)),
            "thinwire-rtx-only" => tw(
                true,
                Mapping::SingleOrdered,
                Some(DeadlineParity::RetransmitOnly),
            ),
            other => {
                let n = other.strip_prefix("thinwire-fec+")?;
                // Plain decimal digits only (no sign, no leading zero).
                if n.starts_with('0') || !n.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                let n: u8 = n.parse().ok()?;
                if !(1..=MAX_FIXED_PARITY).contains(&n) {
                    return None;
                }
                tw(true, Mapping::SingleOrdered, Some(DeadlineParity::Fixed(n)))
            }
        })
    }

    /// The thinwire configuration named `base`, changed by a name suffix: `vary` gives the
    /// changed configuration, or `None` where the suffix does not apply to it.
    fn thinwire_variant(
        base: &str,
        vary: impl FnOnce(ThinwireProtocol) -> Option<ThinwireProtocol>,
    ) -> Option<ProtocolSpec> {
        match Self::parse(base)? {
            ProtocolSpec::Thinwire(t) => vary(t).map(ProtocolSpec::Thinwire),
            _ => None,
        }
    }

    /// The name of this protocol configuration.
    pub fn name(&self) -> String {
        match self {
            ProtocolSpec::TcpModel => "tcp-model".into(),
            ProtocolSpec::TcpVariant(v) => v.name().into(),
            ProtocolSpec::UdpModel => "udp-model".into(),
            ProtocolSpec::SctpModel => "sctp-model".into(),
            ProtocolSpec::DccpModel => "dccp-model".into(),
            ProtocolSpec::TcpStreams(m) => super::TcpStreams::new(*m).name(),
            ProtocolSpec::Thinwire(t) => t.name(),
        }
    }
}
