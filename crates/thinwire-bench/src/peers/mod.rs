//! The three transports behind [`BenchHost`](crate::host::BenchHost): thinwire's blocking
//! host, ENet through `thinwire-enet`, and a KCP host over one UDP socket.

pub(crate) mod enet;
pub(crate) mod kcp;
pub(crate) mod thinwire;

/// Runs `$body` with `$h` bound to the host type of `$proto`.
macro_rules! with_host {
    ($proto:expr, $h:ident => $body:expr) => {
        match $proto {
            $crate::host::Protocol::Thinwire => {
                type $h = $crate::peers::thinwire::TwHost;
                $body
            }
            $crate::host::Protocol::Enet => {
                type $h = $crate::peers::enet::EnetHost;
                $body
            }
            $crate::host::Protocol::Kcp => {
                type $h = $crate::peers::kcp::KcpHost;
                $body
            }
        }
    };
}
pub(crate) use with_host;
