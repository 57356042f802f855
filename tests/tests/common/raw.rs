//! A hand-driven peer (filled in below).
