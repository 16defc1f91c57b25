//! The trunk's tests: frames (golden bytes, round trips, hostile input), the delivery rules
//! and bounds in isolation, and both gateways end to end in simulated time.

mod admission;
mod batch;
mod bounds;
mod e2e;
mod fin;
mod frames;
mod hold;
mod resume;
mod scale;
