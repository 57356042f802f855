//! Error paths (filled in below).
