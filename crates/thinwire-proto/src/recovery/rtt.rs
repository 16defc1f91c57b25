//! Round-trip time estimation and the retransmission timeout (RFC 6298, with the thin-stream form).

use crate::pack::{Pack, Packer, Unpacker};
use std::time::Duration;

/// `d` in nanoseconds, saturating at `u64::MAX` (584 years).
///
/// The timeouts are computed in nanoseconds rather than in `Duration`s, whose every operation
/// normalises seconds and nanoseconds (ten times the instructions, several times per packet):
/// the same results, since `Duration` arithmetic is exact integer nanoseconds too (its
/// division rounds down as an integer one does), as long as nothing exceeds 584 years.
pub(crate) fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `n` nanoseconds; the saturated `u64::MAX` reads as [`Duration::MAX`].
fn from_ns(n: u64) -> Duration {
    if n == u64::MAX {
        Duration::MAX
    } else {
        Duration::from_nanos(n)
    }
}

/// The margin a timer allows past SRTT for RTT variance, `max(G, min(cap, 4 * RTTVAR))`, in
/// nanoseconds: the one formula of [`thin_rto`] and of the RTT estimator's standard RTO and
/// deadline stages.
fn margin_ns(rttvar: u64, cap: u64, granularity: u64) -> u64 {
    rttvar.saturating_mul(4).min(cap).max(granularity)
}

/// [`thin_rto`] in nanoseconds (see [`ns`]).
fn thin_rto_ns(srtt: u64, rttvar: u64, granularity: u64, ack_delay: u64) -> u64 {
    srtt.saturating_add(margin_ns(rttvar, srtt / 2, granularity))
        .saturating_add(ack_delay)
}

/// The retransmission timeout of a thin stream, before backoff and the
/// [`min_rto`](crate::TransportConfig::min_rto)..[`max_rto`](crate::TransportConfig::max_rto)
/// clamp: `SRTT + max(G, min(SRTT / 2, 4 * RTTVAR)) + ack_delay`.
///
/// `srtt` and `rttvar` are the smoothed RTT and its variation (RFC 6298), `granularity` the
/// timer granularity `G` ([`TransportConfig::timer_granularity`](crate::TransportConfig)) and
/// `ack_delay` how long the peer may hold its acknowledgement (at most its
/// [`max_ack_delay`](crate::TransportConfig::max_ack_delay)). Capping the variance term at
/// `SRTT / 2`, unlike RFC 6298's `4 * RTTVAR`, keeps a burst of RTT variance from doubling
/// the timeout of a stream that can only recover by timeout. Connections use it while a stream
/// is thin; the repair policy's stages are spaced by it
/// ([`RepairTarget::stages`](crate::RepairTarget::stages), `thinwire policy repair`). Saturates
/// instead of overflowing: a timeout beyond 584 years reads as [`Duration::MAX`].
pub fn thin_rto(
    srtt: Duration,
    rttvar: Duration,
    granularity: Duration,
    ack_delay: Duration,
) -> Duration {
    from_ns(thin_rto_ns(
        ns(srtt),
        ns(rttvar),
        ns(granularity),
        ns(ack_delay),
    ))
}

/// Smoothed RTT estimator (RFC 6298 section 2) and RTO calculator.
///
/// Samples are corrected by the peer's reported ack delay when that does not push them below the
/// minimum RTT seen (as in RFC 9002 section 5.3), so delayed acks do not inflate the estimate.
#[derive(Debug, Clone)]
pub(crate) struct RttEstimator {
    srtt: Duration,
    rttvar: Duration,
    min_rtt: Option<Duration>,
    latest: Duration,
    has_sample: bool,
}

impl RttEstimator {
    /// A new estimator seeded with `initial_rtt` (used until the first sample: SRTT = initial,
    /// RTTVAR = initial / 2, as RFC 6298 section 2.1 does for its first sample).
    pub(crate) fn new(initial_rtt: Duration) -> Self {
        Self {
            srtt: initial_rtt,
            rttvar: initial_rtt / 2,
            min_rtt: None,
            latest: initial_rtt,
            has_sample: false,
        }
    }

    /// Feeds one RTT sample measured as `ack arrival - send time`, with the peer's `ack_delay`.
    pub(crate) fn update(&mut self, sample: Duration, ack_delay: Duration) {
        let min = *self.min_rtt.get_or_insert(sample);
        if sample < min {
            self.min_rtt = Some(sample);
        }
        let min = self.min_rtt.unwrap_or(sample);
        // Subtract the peer's ack delay only when the result stays plausible (>= min RTT).
        let adjusted = if sample >= min + ack_delay {
            sample - ack_delay
        } else {
            sample
        };
        self.latest = adjusted;
        if !self.has_sample {
            self.has_sample = true;
            self.srtt = adjusted;
            self.rttvar = adjusted / 2;
        } else {
            // RTTVAR <- 3/4 RTTVAR + 1/4 |SRTT - R'|; SRTT <- 7/8 SRTT + 1/8 R'
            let diff = self.srtt.abs_diff(adjusted);
            self.rttvar = (self.rttvar * 3 + diff) / 4;
            self.srtt = (self.srtt * 7 + adjusted) / 8;
        }
    }

    /// A retransmission timeout turned out spurious: the acknowledgement of the packet it
    /// declared lost came late (`sample` after sending), not never. The estimate is raised so
    /// that the next timeout would have waited: `SRTT = max(SRTT, sample)` and
    /// `RTTVAR = max(RTTVAR, sample / 2)`, the reinitialisation the Eifel response algorithm
    /// (RFC 4015) makes from the first sample after a spurious timeout. Later samples bring it
    /// down again at the usual pace.
    pub(crate) fn on_spurious_timeout(&mut self, sample: Duration) {
        self.srtt = self.srtt.max(sample);
        self.rttvar = self.rttvar.max(sample / 2);
    }

    /// The smoothed RTT.
    pub(crate) fn srtt(&self) -> Duration {
        self.srtt
    }

    /// The RTT variation.
    pub(crate) fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// The latest (ack-delay corrected) sample.
    pub(crate) fn latest(&self) -> Duration {
        self.latest
    }

    /// The smallest sample seen, if any.
    pub(crate) fn min_rtt(&self) -> Option<Duration> {
        self.min_rtt
    }

    /// The retransmission timeout before backoff and clamping.
    ///
    /// Standard form (RFC 6298 section 2.3): `SRTT + max(G, 4 * RTTVAR)`.
    /// Thin-stream form: [`thin_rto`]. In both, the peer's maximum ack delay is added (the peer
    /// may hold its ack that long). In `Duration`s, for the tests: connections use
    /// [`rto_ns`](Self::rto_ns).
    #[cfg(test)]
    pub(crate) fn rto(
        &self,
        thin_form: bool,
        granularity: Duration,
        peer_max_ack_delay: Duration,
    ) -> Duration {
        from_ns(self.rto_ns(thin_form, ns(granularity), ns(peer_max_ack_delay)))
    }

    /// The retransmission timeout before backoff and clamping, in nanoseconds (see [`ns`]):
    /// [`thin_rto`] in thin form, `SRTT + max(G, 4 * RTTVAR) + peer_max_ack_delay` (RFC 6298
    /// section 2.3, with the peer's ACK delay) otherwise.
    pub(crate) fn rto_ns(&self, thin_form: bool, granularity: u64, peer_max_ack_delay: u64) -> u64 {
        let (srtt, rttvar) = (ns(self.srtt), ns(self.rttvar));
        if thin_form {
            return thin_rto_ns(srtt, rttvar, granularity, peer_max_ack_delay);
        }
        srtt.saturating_add(margin_ns(rttvar, u64::MAX, granularity))
            .saturating_add(peer_max_ack_delay)
    }

    /// The margin a timer allows past SRTT for RTT variance: `max(G, min(cap, 4 * RTTVAR))`.
    /// The RTO uses it (capped at `SRTT / 2` in thin form) and so do deadline stages (capped at
    /// `SRTT / 4`).
    pub(crate) fn variance_margin(&self, cap: Duration, granularity: Duration) -> Duration {
        from_ns(margin_ns(ns(self.rttvar), ns(cap), ns(granularity)))
    }
}

impl Pack for RttEstimator {
    fn pack(&self, p: &mut Packer) -> bool {
        p.duration(self.srtt);
        p.duration(self.rttvar);
        p.opt_duration(self.min_rtt);
        p.duration(self.latest);
        p.bool(self.has_sample);
        true
    }

    fn unpack(u: &mut Unpacker<'_>) -> Self {
        Self {
            srtt: u.duration(),
            rttvar: u.duration(),
            min_rtt: u.opt_duration(),
            latest: u.duration(),
            has_sample: u.bool(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn first_sample_sets_srtt_and_half_var() {
        let mut r = RttEstimator::new(ms(500));
        r.update(ms(100), Duration::ZERO);
        assert_eq!(r.srtt(), ms(100));
        assert_eq!(r.rttvar(), ms(50));
        assert_eq!(r.rto(false, ms(1), Duration::ZERO), ms(300));
        // thin form caps the variance term at SRTT/2
        assert_eq!(r.rto(true, ms(1), Duration::ZERO), ms(150));
    }

    #[test]
    fn smoothing_follows_rfc6298() {
        let mut r = RttEstimator::new(ms(500));
        r.update(ms(100), Duration::ZERO);
        r.update(ms(200), Duration::ZERO);
        // rttvar = 3/4*50 + 1/4*100 = 62.5; srtt = 7/8*100 + 1/8*200 = 112.5
        assert_eq!(r.rttvar(), Duration::from_micros(62_500));
        assert_eq!(r.srtt(), Duration::from_micros(112_500));
    }

    #[test]
    fn ack_delay_subtracted_only_when_plausible() {
        let mut r = RttEstimator::new(ms(500));
        r.update(ms(100), Duration::ZERO);
        r.update(ms(110), ms(5));
        assert_eq!(r.latest(), ms(105));
        // would go below min_rtt: not subtracted
        r.update(ms(101), ms(50));
        assert_eq!(r.latest(), ms(101));
    }

    #[test]
    fn a_spurious_timeout_raises_the_estimate_to_the_late_sample() {
        let mut r = RttEstimator::new(ms(500));
        for _ in 0..50 {
            r.update(ms(100), Duration::ZERO);
        }
        let before = r.rto(true, ms(1), Duration::ZERO);
        r.on_spurious_timeout(ms(180));
        assert_eq!(r.srtt(), ms(180));
        assert_eq!(r.rttvar(), ms(90));
        // the thin RTO now waits past the late sample
        assert!(r.rto(true, ms(1), Duration::ZERO) > ms(180));
        assert!(before < ms(110));
        // a sample below the estimate leaves it alone
        r.on_spurious_timeout(ms(50));
        assert_eq!(r.srtt(), ms(180));
    }

    #[test]
    fn steady_rtt_converges_to_tight_rto() {
        let mut r = RttEstimator::new(ms(500));
        for _ in 0..100 {
            r.update(ms(200), Duration::ZERO);
        }
        let rto = r.rto(true, ms(1), Duration::ZERO);
        assert!(rto < ms(205), "{rto:?}");
    }

    #[test]
    fn thin_rto_caps_the_variance_at_half_the_srtt() {
        // 4 * RTTVAR = 400 ms, capped at SRTT / 2 = 100 ms; the standard form keeps 400.
        assert_eq!(thin_rto(ms(200), ms(100), ms(1), ms(5)), ms(305));
        let mut r = RttEstimator::new(ms(200));
        r.update(ms(200), Duration::ZERO);
        r.on_spurious_timeout(ms(200)); // RTTVAR = max(100, 100)
        assert_eq!(
            r.rto(true, ms(1), ms(5)),
            thin_rto(ms(200), ms(100), ms(1), ms(5))
        );
        assert_eq!(r.rto(false, ms(1), ms(5)), ms(605));
    }

    /// The timeout and the variance margin as `Duration` arithmetic computed them before they
    /// moved to nanoseconds: the reference the nanosecond formulas must match.
    fn rto_in_durations(r: &RttEstimator, thin: bool, g: Duration, ack: Duration) -> Duration {
        let margin = |cap: Duration| r.rttvar().saturating_mul(4).min(cap).max(g);
        let cap = if thin { r.srtt() / 2 } else { Duration::MAX };
        r.srtt().saturating_add(margin(cap)).saturating_add(ack)
    }

    proptest::proptest! {
        /// The timeout in nanoseconds is the timeout in `Duration`s, to the nanosecond, in
        /// both forms, for estimates up to an hour (well past `max_rto`'s range), and so are
        /// the thin-stream timeout and a deadline stage's margin (capped at SRTT / 4).
        #[test]
        fn the_timeout_in_nanoseconds_is_the_timeout_in_durations(
            first in 1u64..3_600_000_000_000,
            samples in proptest::collection::vec((0u64..3_600_000_000_000, 0u64..100_000_000), 0..8),
            g in 0u64..100_000_000,
            ack in 0u64..1_000_000_000,
            thin: bool,
        ) {
            let mut r = RttEstimator::new(Duration::from_nanos(first));
            for (sample, delay) in samples {
                r.update(Duration::from_nanos(sample), Duration::from_nanos(delay));
            }
            let (g_d, ack_d) = (Duration::from_nanos(g), Duration::from_nanos(ack));
            let want = rto_in_durations(&r, thin, g_d, ack_d);
            proptest::prop_assert_eq!(Duration::from_nanos(r.rto_ns(thin, g, ack)), want);
            proptest::prop_assert_eq!(r.rto(thin, g_d, ack_d), want);
            proptest::prop_assert_eq!(
                thin_rto(r.srtt(), r.rttvar(), g_d, ack_d),
                rto_in_durations(&r, true, g_d, ack_d)
            );
            let quarter = r.srtt() / 4;
            proptest::prop_assert_eq!(
                r.variance_margin(quarter, g_d),
                r.rttvar().saturating_mul(4).min(quarter).max(g_d)
            );
        }
    }

    #[test]
    fn thin_rto_of_a_steady_path_is_srtt_plus_granularity_plus_ack_delay() {
        assert_eq!(thin_rto(ms(200), Duration::ZERO, ms(1), ms(5)), ms(206));
        // a variance under G still costs G
        assert_eq!(
            thin_rto(ms(200), Duration::from_micros(100), ms(1), ms(5)),
            ms(206)
        );
        assert_eq!(
            thin_rto(Duration::MAX, Duration::MAX, ms(1), ms(5)),
            Duration::MAX
        );
    }
}
