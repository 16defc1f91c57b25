//! Wire format (being written).
