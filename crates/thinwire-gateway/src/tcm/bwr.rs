//! The bandwidth relation of TCM (Saldaña et al., Eq. 1): multiplexed bytes over native bytes.
//!
//! With k the number of packets that arrive in a period (periods with k = 0 send nothing):
//!
//! ```text
//! BWR = Pr(k=1)/E[k]
//!     + Pr(k>1)·CH / (E[k]·(NH+E[P]))
//!     + Pr(k>1)·E[k|k>1]·(MH+E[RH]+E[P]) / (E[k]·(NH+E[P]))
//! ```
//!
//! The last term is garbled in the extracted paper; this is the form consistent with the
//! paper's remark that, when Pr(k>1) ≈ 1 and E\[k|k>1\] ≈ E\[k\], it tends to the asymptote
//! (MH+E\[RH\]+E\[P\]) / (NH+E\[P\]). Saving = 1 − BWR.

/// The statistics of k, the packets per (non-empty) period.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct KStats {
    /// Pr(k = 1).
    pub p_single: f64,
    /// Pr(k > 1).
    pub p_multi: f64,
    /// E\[k\].
    pub mean: f64,
    /// E\[k | k > 1\].
    pub mean_multi: f64,
    /// Number of non-empty periods observed.
    pub periods: u64,
}

impl KStats {
    /// Statistics of the observed per-period counts; zeros (empty periods) are ignored.
    pub fn from_counts(counts: impl IntoIterator<Item = usize>) -> KStats {
        let (mut n, mut singles, mut total, mut multi_n, mut multi_total) =
            (0u64, 0u64, 0u64, 0u64, 0u64);
        for k in counts.into_iter().filter(|&k| k > 0) {
            n += 1;
            total += k as u64;
            if k == 1 {
                singles += 1;
            } else {
                multi_n += 1;
                multi_total += k as u64;
            }
        }
        if n == 0 {
            return KStats::default();
        }
        KStats {
            p_single: singles as f64 / n as f64,
            p_multi: multi_n as f64 / n as f64,
            mean: total as f64 / n as f64,
            mean_multi: if multi_n == 0 {
                0.0
            } else {
                multi_total as f64 / multi_n as f64
            },
            periods: n,
        }
    }
}

impl KStats {
    /// The k statistics the formula assumes a priori when packets arrive as a Poisson process
    /// with `lambda` packets per period on average (k counted over non-empty periods only):
    /// a prediction from the packet rate alone, without observing any period.
    pub fn poisson(lambda: f64) -> KStats {
        if !(lambda.is_finite() && lambda > 0.0) {
            return KStats::default();
        }
        let e = (-lambda).exp();
        let nonempty = 1.0 - e;
        let p_single = lambda * e / nonempty;
        let p_multi = 1.0 - p_single;
        let mean = lambda / nonempty;
        let multi_mass = nonempty - lambda * e;
        KStats {
            p_single,
            p_multi,
            mean,
            mean_multi: if multi_mass > 0.0 {
                (lambda - lambda * e) / multi_mass
            } else {
                0.0
            },
            periods: 0,
        }
    }
}

/// The inputs of Eq. 1: k statistics and header sizes in bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BwrInputs {
    /// Statistics of k.
    pub k: KStats,
    /// Common header of a bundle (tunnel overhead; the paper's IPv4 + L2TP + PPP = 25 B).
    pub ch: f64,
    /// Native network + transport header (IPv4/UDP 28 B, IPv6/UDP 48 B).
    pub nh: f64,
    /// Multiplexing header per packet (PPPMux in the paper; our record length prefix).
    pub mh: f64,
    /// Mean reduced (compressed) header per packet, E\[RH\].
    pub rh: f64,
    /// Mean payload per packet.
    pub payload: f64,
}

/// Eq. 1: bytes sent with TCM per native byte (0 when nothing was observed).
pub fn bwr(i: &BwrInputs) -> f64 {
    let k = &i.k;
    if k.mean == 0.0 {
        return 0.0;
    }
    let native = i.nh + i.payload;
    k.p_single / k.mean
        + k.p_multi * i.ch / (k.mean * native)
        + k.p_multi * k.mean_multi * (i.mh + i.rh + i.payload) / (k.mean * native)
}

/// The asymptote (MH + E\[RH\] + E\[P\]) / (NH + E\[P\]) that BWR approaches with many packets per
/// period.
pub fn bwr_asymptote(i: &BwrInputs) -> f64 {
    (i.mh + i.rh + i.payload) / (i.nh + i.payload)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poisson_k_statistics_match_their_definition() {
        let k = KStats::poisson(2.0);
        let e = (-2.0f64).exp();
        // Pr(k=1 | k>=1) = λe^-λ / (1 - e^-λ); E[k | k>=1] = λ / (1 - e^-λ)
        assert!((k.p_single - 2.0 * e / (1.0 - e)).abs() < 1e-12);
        assert!((k.mean - 2.0 / (1.0 - e)).abs() < 1e-12);
        // E[k] = Pr(k=1)·1 + Pr(k>1)·E[k|k>1]
        assert!((k.p_single + k.p_multi * k.mean_multi - k.mean).abs() < 1e-9);
        // few packets per period: mostly single; many: almost never
        assert!(KStats::poisson(0.01).p_single > 0.99);
        assert!(KStats::poisson(20.0).p_single < 1e-6);
        assert_eq!(KStats::poisson(0.0), KStats::default());
    }
}
