//! The smoothed round-trip time and its variation of RFC 6298 (Sec. 2), which
//! the TCP, SCTP (RFC 4960 Sec. 6.3.1) and DCCP models share.

use std::time::Duration;

/// SRTT and RTTVAR, updated with the gains 1/8 and 1/4.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
}

impl RttEstimator {
    /// Takes a measurement: the first sets SRTT = R and RTTVAR = R/2, later
    /// ones RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R| and SRTT = 7/8 SRTT + 1/8 R.
    pub fn sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                self.rttvar = self.rttvar * 3 / 4 + s.abs_diff(r) / 4;
                self.srtt = Some(s * 7 / 8 + r / 8);
            }
        }
    }

    /// The smoothed RTT, `None` before the first measurement.
    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    /// The RTT variation (zero before the first measurement).
    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    /// RFC 6298's timeout before its bounds: SRTT + 4 RTTVAR (`None` before
    /// the first measurement).
    pub fn rto(&self) -> Option<Duration> {
        self.srtt.map(|s| s + self.rttvar * 4)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc_6298() {
        let ms = Duration::from_millis;
        let mut e = RttEstimator::default();
        assert_eq!(e.rto(), None);
        e.sample(ms(100));
        assert_eq!(
            (e.srtt(), e.rttvar(), e.rto()),
            (Some(ms(100)), ms(50), Some(ms(300)))
        );
        e.sample(ms(200));
        // RTTVAR = 37.5 + 25, SRTT = 87.5 + 25.
        assert_eq!(e.rttvar(), Duration::from_micros(62_500));
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
    }
}
