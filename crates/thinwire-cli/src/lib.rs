//! The package of the `thinwire` command-line program (`src/main.rs`). This library is empty:
//! it exists so that the package's tests can depend on the package with every feature.
//!
//! The default build has what the simulator needs: `thinwire lab run`, `lab list`,
//! `lab gateway`, `lab merge` and `thinwire policy`. Cargo features add the real stacks:
//!
//! | feature | adds |
//! |---|---|
//! | `emulator` | `thinwire lab run --emulate`: the real-kernel emulator and its real peers (Linux, root) |
//! | `bench` | `thinwire bench`: thinwire, ENet, KCP and GNS side by side on loopback |
//! | `gateway` | `thinwire gateway ...`: the gateway processes |
//! | `full` | all of them |
//!
//! For example `cargo build --release -p thinwire-cli --features full`. A subcommand whose
//! feature was not built fails with the command that rebuilds it.
#![forbid(unsafe_code)]
