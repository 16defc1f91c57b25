//! Behaviour tests of the core over the two-endpoint harness.

mod admission;
mod attacks;
mod basics;
mod deadline;
mod fuzz_replay;
mod lifecycle;
mod memory;
mod properties;
mod repair;
mod thin;
