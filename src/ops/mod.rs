//! Operations: what storlab does, under an explicit identity. The SQL
//! functions (`api`) and the background worker (`jobs`) both use them;
//! neither imports the other.

pub mod identity;
