//! The numerical core: binomial reception probabilities and the Lagrangian dynamic programme.
//!
//! Everything here works on validated parameters (see [`super::policy::PolicyParams`]); the
//! public wrappers in [`super::policy`] do the checking.

/// Probabilities `P(exactly r of n packets arrive)` for `r in 0..len` (zero for `r > n`), each
/// packet lost independently with probability `loss`.
///
/// Computed without factorials or logarithms: start from 1 at the mode, walk outwards with the
/// ratio of consecutive terms (each at most 1 away from the mode, so nothing overflows and far
/// tails underflow harmlessly to 0), then normalise. Relative error is a few ulps times `n`.
/// `loss` must be in `[0, 1]`.
pub(crate) fn reception_row(n: usize, loss: f64, len: usize) -> Vec<f64> {
    let mut row = vec![0.0; len];
    if loss <= 0.0 {
        if n < len {
            row[n] = 1.0;
        }
        return row;
    }
    if loss >= 1.0 {
        if len > 0 {
            row[0] = 1.0;
        }
        return row;
    }
    let arrive = 1.0 - loss;
    // P(r+1) / P(r) = (n - r) / (r + 1) * up and P(r-1) / P(r) = r / (n - r + 1) * down.
    let up = arrive / loss;
    let down = loss / arrive;
    // Mode of Binomial(n, 1 - p): floor((n + 1)(1 - p)), at most n since p > 0.
    let mode = (((n as f64 + 1.0) * arrive).floor() as usize).min(n);
    let mut full = vec![0.0; n + 1];
    full[mode] = 1.0;
    for r in mode..n {
        full[r + 1] = full[r] * ((n - r) as f64 / (r + 1) as f64) * up;
    }
    for r in (1..=mode).rev() {
        full[r - 1] = full[r] * (r as f64 / (n - r + 1) as f64) * down;
    }
    let total: f64 = full.iter().sum();
    for (slot, value) in row.iter_mut().zip(&full) {
        *slot = value / total;
    }
    row
}

/// Closed form of the miss probability of the trivial policy (send exactly what is missing):
/// each data packet is retransmitted until it arrives, independently of the others, so the
/// message is incomplete after `stages` stages iff some packet was lost `stages` times in a row:
/// `1 - (1 - p^I)^k`.
pub(crate) fn trivial_miss(packets: u16, stages: u16, loss: f64) -> f64 {
    let all_lost = loss.powi(i32::from(stages));
    -(f64::from(packets) * (-all_lost).ln_1p()).exp_m1()
}

/// Expected packets sent by the trivial policy: packet `j` is sent in stage `i` iff it was lost in
/// the `i - 1` earlier stages, so `k * (1 + p + ... + p^(I-1))`.
pub(crate) fn trivial_cost(packets: u16, stages: u16, loss: f64) -> f64 {
    let mut sum = 0.0;
    let mut term = 1.0;
    for _ in 0..stages {
        sum += term;
        term *= loss;
    }
    f64::from(packets) * sum
}

/// Dot product with four accumulators (lets the compiler vectorise; the order of summation is
/// fixed, so results are deterministic).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0.0f64; 4];
    let mut ca = a.chunks_exact(4);
    let mut cb = b.chunks_exact(4);
    for (x, y) in (&mut ca).zip(&mut cb) {
        acc[0] += x[0] * y[0];
        acc[1] += x[1] * y[1];
        acc[2] += x[2] * y[2];
        acc[3] += x[3] * y[3];
    }
    let mut tail = 0.0;
    for (x, y) in ca.remainder().iter().zip(cb.remainder()) {
        tail += x * y;
    }
    (acc[0] + acc[1]) + (acc[2] + acc[3]) + tail
}

/// One deterministic policy produced by the dynamic programme, with its exact expected cost and
/// miss probability from the initial state `(1, k)`.
#[derive(Debug, Clone)]
pub(crate) struct Solution {
    /// `send[(stage - 1) * k + (q - 1)] = a - q`.
    pub(crate) extra: Vec<u8>,
    /// Expected packets sent.
    pub(crate) cost: f64,
    /// Probability the message is still incomplete after the last stage.
    pub(crate) miss: f64,
    /// The price this policy is optimal for (infinite for the trivial policy).
    pub(crate) lambda: f64,
}

impl Solution {
    /// The policy that sends exactly what is missing, with its closed-form cost and miss.
    pub(crate) fn trivial(packets: u16, stages: u16, loss: f64) -> Self {
        Self {
            extra: vec![0; usize::from(packets) * usize::from(stages)],
            cost: trivial_cost(packets, stages, loss),
            miss: trivial_miss(packets, stages, loss),
            lambda: f64::INFINITY,
        }
    }
}

/// The finite-horizon model for one `(k, I, p)`: reception probabilities precomputed for every
/// action the cap allows.
pub(crate) struct Model {
    k: usize,
    stages: usize,
    max_extra: usize,
    /// `pmf[a * k + r] = P(r of a arrive)` for `a in 0..=k + max_extra`, `r in 0..k`.
    pmf: Vec<f64>,
}

impl Model {
    /// `packets` in 1..=64, `stages` >= 1, `loss` in [0, 1), `max_extra` <= 255.
    pub(crate) fn new(packets: u16, stages: u16, loss: f64, max_extra: u8) -> Self {
        let k = usize::from(packets);
        let max_extra = usize::from(max_extra);
        let max_send = k + max_extra;
        let mut pmf = Vec::with_capacity((max_send + 1) * k);
        for a in 0..=max_send {
            pmf.extend(reception_row(a, loss, k));
        }
        Self {
            k,
            stages: usize::from(stages),
            max_extra,
            pmf,
        }
    }

    /// Solves `J(i,q) = min_a [ lambda*a + sum_q' P(q'|q,a) J(i+1,q') ]` backwards from
    /// `J(I+1, q>0) = 1`, `J(I+1, 0) = 0`, for `a` in `q..=q + max_extra`, and returns the
    /// minimising deterministic policy (ties go to the fewest packets, except at `lambda = 0`,
    /// where the cap is taken directly) together with its exact expected cost and miss
    /// probability, carried alongside `J`.
    ///
    /// With `all_states == false` the first stage is solved only for `q = k`, the one state a
    /// message starts in (enough for cost and miss, and about `1/I` of the work cheaper); the
    /// other first-stage actions are then left at 0.
    pub(crate) fn lagrangian(&self, lambda: f64, all_states: bool) -> Solution {
        let k = self.k;
        // Value vectors are stored reversed: v[k - q] holds the value for q missing, so that
        // sum_{r<q} P(r arrive) * V(q - r) is a dot product of pmf[a][0..q] with v[k-q..k].
        // A complete message (q = 0) costs nothing more and cannot miss, so it never appears.
        let mut value = vec![1.0; k];
        let mut cost = vec![0.0; k];
        let mut miss = vec![1.0; k];
        let mut next_value = vec![0.0; k];
        let mut next_cost = vec![0.0; k];
        let mut next_miss = vec![0.0; k];
        let mut extra = vec![0u8; k * self.stages];
        for stage in (0..self.stages).rev() {
            let first_q = if stage == 0 && !all_states { k } else { 1 };
            for q in first_q..=k {
                let tail = k - q;
                let future = &value[tail..];
                let mut best = f64::INFINITY;
                let mut best_a = q;
                let max_a = q + self.max_extra;
                // J(i+1, .) is non-decreasing in q' (one more missing packet never helps: by
                // induction, the action for q + 1, or one packet fewer if it is at the cap,
                // leaves at most as many missing from q), and more packets make q' stochastically
                // smaller, so the future term is non-increasing in `a` and its value at the cap
                // bounds it from below for every action.
                let floor = dot(&self.pmf[max_a * k..max_a * k + q], future);
                // At price zero the cap itself is optimal (the most reliable policy).
                let first_a = if lambda == 0.0 { max_a } else { q };
                for a in first_a..=max_a {
                    let price = lambda * a as f64;
                    // No action from here on can beat `best`.
                    if price + floor >= best {
                        break;
                    }
                    let row = &self.pmf[a * k..a * k + q];
                    let v = price + dot(row, future);
                    if v < best {
                        best = v;
                        best_a = a;
                    }
                }
                let row = &self.pmf[best_a * k..best_a * k + q];
                next_value[tail] = best;
                next_cost[tail] = best_a as f64 + dot(row, &cost[tail..]);
                next_miss[tail] = dot(row, &miss[tail..]);
                // best_a - q <= max_extra <= 255
                extra[stage * k + q - 1] = u8::try_from(best_a - q).unwrap_or(u8::MAX);
            }
            std::mem::swap(&mut value, &mut next_value);
            std::mem::swap(&mut cost, &mut next_cost);
            std::mem::swap(&mut miss, &mut next_miss);
        }
        Solution {
            extra,
            cost: cost[0],
            miss: miss[0],
            lambda,
        }
    }
}

/// Outcome of the constrained search.
pub(crate) enum Search {
    /// The cheapest Lagrangian policy whose miss probability is within the budget.
    Met(Solution),
    /// Even the most reliable policy under the cap misses more often than the budget allows;
    /// that policy is returned.
    Unreachable(Solution),
}

/// Finds the cheapest deterministic Lagrangian policy with `miss <= budget`.
///
/// The Lagrangian dual `g(lambda) = min_pi [lambda * cost(pi) + miss(pi)]` is concave and
/// piecewise linear; its pieces are the deterministic policies on the lower convex hull of the
/// achievable `(cost, miss)` points. Starting from the bracket `lambda = 0` (most reliable, must
/// be feasible) and `lambda = infinity` (trivial, infeasible, else we would not be here), each
/// step solves the DP at the price where the two bracketing policies' lines cross. Either the
/// DP finds nothing below that crossing (the two are adjacent hull vertices: the feasible one is
/// the answer, exactly what bisection on lambda converges to) or it returns a new hull vertex
/// strictly between them, which replaces the bracket end on its side of the budget. This ends
/// after finitely many DP passes (a handful in practice) instead of the ~50 of plain bisection.
pub(crate) fn constrained(model: &Model, trivial: Solution, budget: f64) -> Search {
    let reliable = model.lagrangian(0.0, false);
    if reliable.miss > budget {
        return Search::Unreachable(model.lagrangian(0.0, true));
    }
    let mut lo = reliable; // feasible, costlier
    let mut hi = trivial; // infeasible, cheaper
    for _ in 0..256 {
        let span = lo.cost - hi.cost;
        let lambda = (hi.miss - lo.miss) / span;
        if !(lambda.is_finite() && lambda > 0.0 && span > 0.0) {
            break;
        }
        let line = lambda * lo.cost + lo.miss;
        let found = model.lagrangian(lambda, false);
        let value = lambda * found.cost + found.miss;
        if value >= line - 1e-12 * line.abs() {
            break;
        }
        if found.miss <= budget {
            if found.cost >= lo.cost {
                break;
            }
            lo = found;
        } else {
            if found.miss >= hi.miss {
                break;
            }
            hi = found;
        }
    }
    // `lo` is optimal somewhere in its price interval, which ends at the breakpoint with `hi`.
    // Re-solve (all states) just below that breakpoint so that states the message cannot reach
    // (stage 1 with fewer than k missing) also get the actions of the largest feasible price,
    // as bisection on lambda would; keep it only if it is the same vertex (feasible, no
    // costlier), else re-solve `lo` itself for all states.
    let breakpoint = (hi.miss - lo.miss) / (lo.cost - hi.cost);
    if breakpoint.is_finite() && breakpoint > 0.0 {
        let edge = model.lagrangian(breakpoint * (1.0 - 1e-9), true);
        if edge.miss <= budget && edge.cost <= lo.cost * (1.0 + 1e-12) {
            return Search::Met(edge);
        }
    }
    Search::Met(model.lagrangian(lo.lambda, true))
}
