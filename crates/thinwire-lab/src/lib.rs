
pub mod metrics;
pub mod report;
