//! Helpers shared by the unit tests.

/// Bytes from hex digits; whitespace is ignored.
pub fn hex(s: &str) -> Vec<u8> {
    let digits: Vec<u8> = s.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|pair| {
            let text = core::str::from_utf8(pair).expect("ascii");
            u8::from_str_radix(text, 16).expect("hex digits")
        })
        .collect()
}
