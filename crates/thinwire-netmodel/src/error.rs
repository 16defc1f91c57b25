//! [`ConfigError`]: an invalid link configuration, and the probability check every model shares.

/// An invalid [`LinkConfig`](crate::LinkConfig) or loss model parameter.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A probability is outside `[0, 1]` or not a number.
    #[error("{name} must be a probability in [0, 1], got {value}")]
    Probability {
        /// Name of the parameter.
        name: &'static str,
        /// Offending value.
        value: f64,
    },
    /// The bandwidth is zero.
    #[error("bandwidth_bps must be greater than zero")]
    ZeroBandwidth,
    /// A mean burst length below one packet.
    #[error("mean burst length must be at least 1 packet, got {0}")]
    BurstLength(f64),
    /// A Gilbert-Elliott chain that can never leave its bad state or never
    /// enter it while it must.
    #[error("invalid Gilbert-Elliott parameters: {0}")]
    GilbertElliott(&'static str),
}

pub(super) fn check_prob(name: &'static str, value: f64) -> Result<(), ConfigError> {
    if (0.0..=1.0).contains(&value) {
        Ok(())
    } else {
        Err(ConfigError::Probability { name, value })
    }
}
