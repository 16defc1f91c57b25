//! Link configuration.

use std::sync::Arc;
use std::time::Duration;

use super::error::{check_prob, ConfigError};
use super::loss::LossModel;
use super::trace::Trace;

/// How the buffer in front of a bandwidth-limited link is bounded.
///
/// Only meaningful when [`LinkConfig::bandwidth_bps`] is set: without a
/// bandwidth limit packets never queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum QueueLimit {
    /// The queue never drops.
    #[default]
    Unlimited,
    /// Drop-tail buffer holding at most this many bytes (including the packet
    /// currently being serialized).
    Bytes(usize),
    /// Drop a packet whose queueing delay (time from `send` to the start of
    /// its serialization) would exceed this duration.
    Time(Duration),
    /// Drop-tail buffer holding at most this many packets waiting, not
    /// counting the one being serialized: ns-2's `Queue/DropTail` with
    /// `limit_` (50 packets by default), whatever their sizes.
    Packets(usize),
}

/// Shape of the jitter added to the propagation delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JitterDistribution {
    /// Uniform in `[-jitter, +jitter]`.
    #[default]
    Uniform,
    /// Normal with standard deviation `jitter / 2`, truncated to
    /// `[-jitter, +jitter]`.
    Normal,
}

/// Configuration of one direction of a link.
#[derive(Debug, Clone)]
pub struct LinkConfig {
    /// One-way propagation delay.
    pub delay: Duration,
    /// Maximum jitter around `delay`; the total delay never goes below zero.
    pub jitter: Duration,
    /// Distribution of the jitter.
    pub jitter_distribution: JitterDistribution,
    /// Whether jitter may reorder packets. When `false`, delivery times are
    /// made monotonic in send order.
    pub reorder: bool,
    /// Random loss model.
    pub loss: LossModel,
    /// Probability that a delivered packet is duplicated.
    pub duplicate: f64,
    /// Probability of flipping one random bit of a delivered packet.
    pub corrupt: f64,
    /// Serialization rate in bits per second; `None` is unlimited.
    pub bandwidth_bps: Option<u64>,
    /// Bound of the queue in front of the bandwidth limit.
    pub queue: QueueLimit,
    /// Per-packet loss/delay trace; overrides `loss`, `delay` and `jitter`.
    pub trace: Option<Arc<Trace>>,
}

impl Default for LinkConfig {
    /// A perfect link: no delay, no loss, unlimited bandwidth.
    fn default() -> Self {
        LinkConfig {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            jitter_distribution: JitterDistribution::Uniform,
            reorder: false,
            loss: LossModel::None,
            duplicate: 0.0,
            corrupt: 0.0,
            bandwidth_bps: None,
            queue: QueueLimit::Unlimited,
            trace: None,
        }
    }
}

impl LinkConfig {
    /// Sets the one-way propagation delay.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// Sets the jitter amplitude.
    pub fn with_jitter(mut self, jitter: Duration) -> Self {
        self.jitter = jitter;
        self
    }

    /// Sets the jitter distribution.
    pub fn with_jitter_distribution(mut self, dist: JitterDistribution) -> Self {
        self.jitter_distribution = dist;
        self
    }

    /// Allows or forbids reordering by jitter.
    pub fn with_reorder(mut self, reorder: bool) -> Self {
        self.reorder = reorder;
        self
    }

    /// Sets the loss model.
    pub fn with_loss(mut self, loss: LossModel) -> Self {
        self.loss = loss;
        self
    }

    /// Sets Bernoulli loss with probability `p`.
    pub fn with_bernoulli_loss(self, p: f64) -> Self {
        self.with_loss(LossModel::Bernoulli { p })
    }

    /// Sets the duplication probability.
    pub fn with_duplicate(mut self, p: f64) -> Self {
        self.duplicate = p;
        self
    }

    /// Sets the corruption probability.
    pub fn with_corrupt(mut self, p: f64) -> Self {
        self.corrupt = p;
        self
    }

    /// Sets the bandwidth limit in bits per second.
    pub fn with_bandwidth(mut self, bps: u64) -> Self {
        self.bandwidth_bps = Some(bps);
        self
    }

    /// Sets the queue limit.
    pub fn with_queue(mut self, queue: QueueLimit) -> Self {
        self.queue = queue;
        self
    }

    /// Sets a per-packet loss/delay trace.
    pub fn with_trace(mut self, trace: Arc<Trace>) -> Self {
        self.trace = Some(trace);
        self
    }

    /// Checks that all parameters are in range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.loss.validate()?;
        check_prob("duplicate", self.duplicate)?;
        check_prob("corrupt", self.corrupt)?;
        if self.bandwidth_bps == Some(0) {
            return Err(ConfigError::ZeroBandwidth);
        }
        Ok(())
    }
}
