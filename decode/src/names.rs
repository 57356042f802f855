//! Human-readable names for TERMINATE causes (RFC 5040 section 4.8,
//! RFC 5041 section 7.2, RFC 5044 section 8, RFC 6581 section 7).

/// Name of a TERMINATE layer.
pub fn layer(layer: u8) -> &'static str {
    match layer {
        0 => "RDMAP",
        1 => "DDP",
        2 => "LLP",
        _ => "unknown layer",
    }
}

/// Name of an error type within its layer.
pub fn etype(layer: u8, etype: u8) -> &'static str {
    match (layer, etype) {
        (0, 0) => "local catastrophic",
        (0, 1) => "remote protection",
        (0, 2) => "remote operation",
        (1, 0) => "local catastrophic",
        (1, 1) => "tagged buffer",
        (1, 2) => "untagged buffer",
        (2, 0) => "MPA",
        _ => "unknown error type",
    }
}

/// Name of an error code within its layer and type.
pub fn code(layer: u8, etype: u8, code: u8) -> &'static str {
    match (layer, etype, code) {
        (0, 0, _) | (1, 0, 0) => "catastrophic",
        (0, 1, 0x00) => "invalid STag",
        (0, 1, 0x01) => "base or bounds violation",
        (0, 1, 0x02) => "access rights violation",
        (0, 1, 0x03) => "STag not associated with RDMAP stream",
        (0, 1, 0x04) => "TO wrap",
        (0, 1 | 2, 0x09) => "STag cannot be invalidated",
        (0, 1 | 2, 0xff) => "unspecified",
        (0, 2, 0x05) => "invalid RDMAP version",
        (0, 2, 0x06) => "unexpected opcode",
        (0, 2, 0x07) => "catastrophic, local to the stream",
        (0, 2, 0x08) => "catastrophic, global",
        (1, 1, 0x00) => "invalid STag",
        (1, 1, 0x01) => "base or bounds violation",
        (1, 1, 0x02) => "STag not associated with DDP stream",
        (1, 1, 0x03) => "TO wrap",
        (1, 1, 0x04) => "invalid DDP version",
        (1, 2, 0x01) => "invalid QN",
        (1, 2, 0x02) => "invalid MSN, no buffer available",
        (1, 2, 0x03) => "invalid MSN, MSN range not valid",
        (1, 2, 0x04) => "invalid MO",
        (1, 2, 0x05) => "message too long for the buffer",
        (1, 2, 0x06) => "invalid DDP version",
        (2, 0, 0x01) => "TCP connection closed, terminated or lost",
        (2, 0, 0x02) => "CRC error",
        (2, 0, 0x03) => "marker and ULPDU length mismatch",
        (2, 0, 0x04) => "invalid MPA Request or Reply",
        (2, 0, 0x05) => "local catastrophic",
        (2, 0, 0x06) => "insufficient IRD resources",
        (2, 0, 0x07) => "no matching RTR model",
        _ => "unknown code",
    }
}

/// Short lower-case opcode names for one-line output and JSON.
pub fn opcode(op: rdmap::Opcode) -> String {
    use rdmap::Opcode::*;
    match op {
        RdmaWrite => "write",
        ReadRequest => "read_req",
        ReadResponse => "read_resp",
        Send => "send",
        SendInvalidate => "send_inv",
        SendSolicited => "send_se",
        SendSolicitedInvalidate => "send_se_inv",
        Terminate => "terminate",
        ImmediateData => "imm_data",
        ImmediateDataSolicited => "imm_data_se",
        AtomicRequest => "atomic_req",
        AtomicResponse => "atomic_resp",
        Unknown(raw) => return format!("opcode_{raw:#x}"),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_defined_cause_has_a_name() {
        for l in 0..3u8 {
            for e in 0..3u8 {
                for c in 0..=255u8 {
                    let known = rdmap::wire::terminate::is_known_cause(l, e, c);
                    let named = code(l, e, c) != "unknown code";
                    assert_eq!(known, named, "layer {l} etype {e} code {c:#x}");
                    if known {
                        assert_ne!(etype(l, e), "unknown error type");
                        assert_ne!(layer(l), "unknown layer");
                    }
                }
            }
        }
    }

    #[test]
    fn opcode_names_are_distinct() {
        let names: std::collections::HashSet<String> = (0..16)
            .map(|b| opcode(rdmap::Opcode::from_bits(b)))
            .collect();
        assert_eq!(names.len(), 16);
        assert_eq!(opcode(rdmap::Opcode::Send), "send");
        assert_eq!(opcode(rdmap::Opcode::Unknown(0xe)), "opcode_0xe");
    }
}
