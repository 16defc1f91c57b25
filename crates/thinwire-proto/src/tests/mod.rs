//! Behaviour tests of the core over the two-endpoint harness.

mod basics;
mod properties;
mod lifecycle;
mod thin;
