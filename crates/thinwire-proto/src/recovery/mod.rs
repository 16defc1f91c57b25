//! Loss recovery: RTT estimation, congestion control, the sent-packet ledger with thin-stream loss
//! detection, and the receiver's record of packets to acknowledge.

mod ack;
mod congestion;
mod estimate;
mod rtt;
mod sent;

pub(crate) use ack::ReceivedPackets;
pub(crate) use congestion::Congestion;
pub(crate) use estimate::{LossEstimates, Rate};
pub use rtt::thin_rto;
pub(crate) use rtt::{ns, RttEstimator};
pub(crate) use sent::{ChunkRef, LossRule, SentPacket, SentPackets};
