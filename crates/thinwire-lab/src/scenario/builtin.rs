//! Scenarios compiled into the binary.

/// Built-in scenarios: (name, TOML text). The first is the default.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "default",
        include_str!("../../../../scenarios/default.toml"),
    ),
    (
        "ao-thin-stream",
        include_str!("../../../../scenarios/ao-thin-stream.toml"),
    ),
    (
        "griwodz-ao",
        include_str!("../../../../scenarios/griwodz-ao.toml"),
    ),
    (
        "petlund-bzflag",
        include_str!("../../../../scenarios/petlund-bzflag.toml"),
    ),
    (
        "mmorpg-content",
        include_str!("../../../../scenarios/mmorpg-content.toml"),
    ),
    (
        "wu-mmorpg",
        include_str!("../../../../scenarios/wu-mmorpg.toml"),
    ),
    (
        "messaging-deadline",
        include_str!("../../../../scenarios/messaging-deadline.toml"),
    ),
    (
        "deadline-xbox",
        include_str!("../../../../scenarios/deadline-xbox.toml"),
    ),
    (
        "deadline-wild",
        include_str!("../../../../scenarios/deadline-wild.toml"),
    ),
    (
        "deadline-wild-bursty",
        include_str!("../../../../scenarios/deadline-wild-bursty.toml"),
    ),
    (
        "pangolin-tcp-wild-na",
        include_str!("../../../../scenarios/pangolin-tcp-wild-na.toml"),
    ),
    (
        "pangolin-tcp-wild-eu",
        include_str!("../../../../scenarios/pangolin-tcp-wild-eu.toml"),
    ),
    (
        "pangolin-wild",
        include_str!("../../../../scenarios/pangolin-wild.toml"),
    ),
    (
        "sweep-1000",
        include_str!("../../../../scenarios/sweep-1000.toml"),
    ),
];

/// The built-in scenario called `name`.
pub fn builtin(name: &str) -> Option<(&'static str, &'static str)> {
    BUILTIN.iter().copied().find(|(n, _)| *n == name)
}
