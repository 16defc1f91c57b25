//! Behaviour tests of the core over the two-endpoint harness.

mod attacks;
mod basics;
mod budget;
mod deadline;
mod fuzz_replay;
mod lifecycle;
mod memory;
mod net;
mod properties;
mod repair;
mod thin;
