//! The subcommands of cargo features this binary was built without: they take any arguments and
//! fail with the command that builds them in.

/// Whatever follows a subcommand that was not built; it is not read.
#[cfg_attr(all(feature = "bench", feature = "gateway"), allow(dead_code))]
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    _args: Vec<String>,
}

/// The error of `thinwire COMMAND` in a build without `feature`.
pub(crate) fn error(command: &str, feature: &str) -> String {
    format!(
        "`thinwire {command}` is not in this build (the default build has the simulator only): \
         rebuild with `cargo build --release -p thinwire-cli --features {feature}` \
         (or `--features full`), or run it with \
         `cargo run --release -p thinwire-cli --features {feature} -- {command} ...`"
    )
}
