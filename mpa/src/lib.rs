//! MPA (RFC 5044, RFC 6581): connection start-up and FPDU framing over a TCP
//! byte stream. Sans-IO: bytes and time in; bytes, events and deadlines out.
#![forbid(unsafe_code)]

pub mod crc32c;
