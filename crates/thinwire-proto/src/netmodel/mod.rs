//! Network model (being written).
