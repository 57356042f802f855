//! RDMAP opcodes (RFC 5040, extended by RFC 7306).

use core::fmt;

/// The untagged DDP queue a message travels on (RFC 5040, RFC 7306).
pub mod queue {
    /// Send, Send with Invalidate, Send with Solicited Event (and
    /// Invalidate), and RFC 7306 Immediate Data (with Solicited Event):
    /// each message consumes a posted receive.
    pub const SEND: u32 = 0;
    /// RDMA Read Request, and RFC 7306 Atomic Operation Request.
    pub const READ_REQUEST: u32 = 1;
    /// Terminate.
    pub const TERMINATE: u32 = 2;
    /// RFC 7306 Atomic Operation Response.
    pub const ATOMIC_RESPONSE: u32 = 3;
}

/// An RDMAP opcode: the low four bits of the RDMAP control byte.
///
/// RFC 7306's code points are carried out only on connections whose two
/// sides agreed to them; elsewhere they are answered, as reserved values
/// always are, with a TERMINATE (remote operation error, unexpected
/// opcode). Reserved values are kept as `Unknown`, so a parser never loses
/// them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Opcode {
    /// RDMA Write: the payload goes to the peer's tagged buffer.
    RdmaWrite,
    /// RDMA Read Request: asks the peer to send a buffer back.
    ReadRequest,
    /// RDMA Read Response: a Read's data, placed in the requester's sink.
    ReadResponse,
    /// Send into the peer's next posted receive.
    Send,
    /// Send that also invalidates an STag of the peer.
    SendInvalidate,
    /// Send that asks the peer for a solicited event.
    SendSolicited,
    /// Send with Invalidate that asks for a solicited event.
    SendSolicitedInvalidate,
    /// Terminate: the sender ends the stream, saying why.
    Terminate,
    /// RFC 7306 Immediate Data (follows a Write or Send to form "RDMA Write
    /// with Immediate Data" / "Send with Immediate Data").
    ImmediateData,
    /// RFC 7306 Immediate Data with Solicited Event.
    ImmediateDataSolicited,
    /// RFC 7306 Atomic Operation Request.
    AtomicRequest,
    /// RFC 7306 Atomic Operation Response.
    AtomicResponse,
    /// A reserved code point (0xC..=0xF), kept as received.
    Unknown(u8),
}

impl Opcode {
    /// Decodes the low four bits of `raw`; the upper bits are ignored.
    pub const fn from_bits(raw: u8) -> Opcode {
        match raw & 0x0f {
            0 => Opcode::RdmaWrite,
            1 => Opcode::ReadRequest,
            2 => Opcode::ReadResponse,
            3 => Opcode::Send,
            4 => Opcode::SendInvalidate,
            5 => Opcode::SendSolicited,
            6 => Opcode::SendSolicitedInvalidate,
            7 => Opcode::Terminate,
            8 => Opcode::ImmediateData,
            9 => Opcode::ImmediateDataSolicited,
            10 => Opcode::AtomicRequest,
            11 => Opcode::AtomicResponse,
            other => Opcode::Unknown(other),
        }
    }

    /// The four-bit code point.
    pub const fn bits(self) -> u8 {
        match self {
            Opcode::RdmaWrite => 0,
            Opcode::ReadRequest => 1,
            Opcode::ReadResponse => 2,
            Opcode::Send => 3,
            Opcode::SendInvalidate => 4,
            Opcode::SendSolicited => 5,
            Opcode::SendSolicitedInvalidate => 6,
            Opcode::Terminate => 7,
            Opcode::ImmediateData => 8,
            Opcode::ImmediateDataSolicited => 9,
            Opcode::AtomicRequest => 10,
            Opcode::AtomicResponse => 11,
            Opcode::Unknown(raw) => raw & 0x0f,
        }
    }

    /// Whether messages with this opcode use the tagged buffer model.
    pub const fn is_tagged(self) -> bool {
        matches!(self, Opcode::RdmaWrite | Opcode::ReadResponse)
    }

    /// The untagged queue number the opcode travels on, `None` for tagged
    /// messages and unknown code points.
    pub const fn queue(self) -> Option<u32> {
        match self {
            Opcode::Send
            | Opcode::SendInvalidate
            | Opcode::SendSolicited
            | Opcode::SendSolicitedInvalidate
            | Opcode::ImmediateData
            | Opcode::ImmediateDataSolicited => Some(queue::SEND),
            Opcode::ReadRequest | Opcode::AtomicRequest => Some(queue::READ_REQUEST),
            Opcode::Terminate => Some(queue::TERMINATE),
            Opcode::AtomicResponse => Some(queue::ATOMIC_RESPONSE),
            Opcode::RdmaWrite | Opcode::ReadResponse | Opcode::Unknown(_) => None,
        }
    }

    /// One of the four Send variants of RFC 5040.
    pub const fn is_send(self) -> bool {
        matches!(
            self,
            Opcode::Send
                | Opcode::SendInvalidate
                | Opcode::SendSolicited
                | Opcode::SendSolicitedInvalidate
        )
    }

    /// The Send variants that ask the receiver to raise a solicited event.
    pub const fn is_solicited(self) -> bool {
        matches!(
            self,
            Opcode::SendSolicited
                | Opcode::SendSolicitedInvalidate
                | Opcode::ImmediateDataSolicited
        )
    }

    /// The Send variants whose untagged header names an STag to invalidate.
    pub const fn invalidates(self) -> bool {
        matches!(
            self,
            Opcode::SendInvalidate | Opcode::SendSolicitedInvalidate
        )
    }

    /// The opcodes of RFC 5040, which every connection carries out (siw
    /// and iw_cxgb4 know no others); anything else is answered with a
    /// TERMINATE unless both sides agreed to RFC 7306.
    pub const fn is_supported(self) -> bool {
        self.bits() <= 7
    }

    /// The code points RFC 7306 adds: Immediate Data (with Solicited
    /// Event), Atomic Request, Atomic Response.
    pub const fn is_rfc7306(self) -> bool {
        matches!(
            self,
            Opcode::ImmediateData
                | Opcode::ImmediateDataSolicited
                | Opcode::AtomicRequest
                | Opcode::AtomicResponse
        )
    }

    /// Messages with this opcode are always a single DDP segment: the
    /// fixed-size headers (Read Request, Terminate, Immediate Data, Atomic
    /// Request and Response).
    pub const fn is_single_segment(self) -> bool {
        matches!(
            self,
            Opcode::ReadRequest
                | Opcode::Terminate
                | Opcode::ImmediateData
                | Opcode::ImmediateDataSolicited
                | Opcode::AtomicRequest
                | Opcode::AtomicResponse
        )
    }

    /// The Send opcode with the given solicited-event and invalidate flags.
    pub const fn send(solicited: bool, invalidate: bool) -> Opcode {
        match (solicited, invalidate) {
            (false, false) => Opcode::Send,
            (false, true) => Opcode::SendInvalidate,
            (true, false) => Opcode::SendSolicited,
            (true, true) => Opcode::SendSolicitedInvalidate,
        }
    }
}

impl From<u8> for Opcode {
    fn from(raw: u8) -> Self {
        Opcode::from_bits(raw)
    }
}

impl From<Opcode> for u8 {
    fn from(op: Opcode) -> u8 {
        op.bits()
    }
}

impl fmt::Display for Opcode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = match self {
            Opcode::RdmaWrite => "RDMA Write",
            Opcode::ReadRequest => "RDMA Read Request",
            Opcode::ReadResponse => "RDMA Read Response",
            Opcode::Send => "Send",
            Opcode::SendInvalidate => "Send with Invalidate",
            Opcode::SendSolicited => "Send with Solicited Event",
            Opcode::SendSolicitedInvalidate => "Send with Solicited Event and Invalidate",
            Opcode::Terminate => "Terminate",
            Opcode::ImmediateData => "Immediate Data",
            Opcode::ImmediateDataSolicited => "Immediate Data with Solicited Event",
            Opcode::AtomicRequest => "Atomic Request",
            Opcode::AtomicResponse => "Atomic Response",
            Opcode::Unknown(raw) => return write!(f, "Unknown opcode {raw:#x}"),
        };
        f.write_str(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_point_round_trips() {
        for raw in 0u8..16 {
            assert_eq!(Opcode::from_bits(raw).bits(), raw);
        }
    }

    #[test]
    fn upper_bits_are_ignored() {
        assert_eq!(Opcode::from_bits(0x43), Opcode::Send);
        assert_eq!(Opcode::from_bits(0xc2), Opcode::ReadResponse);
    }

    #[test]
    fn rfc5040_code_points() {
        assert_eq!(Opcode::RdmaWrite.bits(), 0);
        assert_eq!(Opcode::ReadRequest.bits(), 1);
        assert_eq!(Opcode::ReadResponse.bits(), 2);
        assert_eq!(Opcode::Send.bits(), 3);
        assert_eq!(Opcode::SendInvalidate.bits(), 4);
        assert_eq!(Opcode::SendSolicited.bits(), 5);
        assert_eq!(Opcode::SendSolicitedInvalidate.bits(), 6);
        assert_eq!(Opcode::Terminate.bits(), 7);
        assert_eq!(Opcode::AtomicRequest.bits(), 0xa);
        assert_eq!(Opcode::AtomicResponse.bits(), 0xb);
        assert_eq!(Opcode::from_bits(0xc), Opcode::Unknown(0xc));
    }

    #[test]
    fn buffer_models_and_queues() {
        assert!(Opcode::RdmaWrite.is_tagged());
        assert!(Opcode::ReadResponse.is_tagged());
        assert_eq!(Opcode::RdmaWrite.queue(), None);
        assert_eq!(Opcode::Send.queue(), Some(queue::SEND));
        assert_eq!(Opcode::SendSolicitedInvalidate.queue(), Some(queue::SEND));
        assert_eq!(Opcode::ReadRequest.queue(), Some(queue::READ_REQUEST));
        assert_eq!(Opcode::Terminate.queue(), Some(queue::TERMINATE));
        assert_eq!(Opcode::ImmediateData.queue(), Some(queue::SEND));
        assert_eq!(Opcode::ImmediateDataSolicited.queue(), Some(queue::SEND));
        assert_eq!(Opcode::AtomicRequest.queue(), Some(queue::READ_REQUEST));
        assert_eq!(Opcode::AtomicResponse.queue(), Some(3));
        assert_eq!(Opcode::Unknown(0xf).queue(), None);
        for raw in 0u8..16 {
            let op = Opcode::from_bits(raw);
            assert!(!(op.is_tagged() && op.queue().is_some()));
        }
    }

    #[test]
    fn send_variants() {
        for (s, i) in [(false, false), (false, true), (true, false), (true, true)] {
            let op = Opcode::send(s, i);
            assert!(op.is_send());
            assert_eq!(op.is_solicited(), s);
            assert_eq!(op.invalidates(), i);
        }
        assert!(!Opcode::RdmaWrite.is_send());
        assert!(!Opcode::ImmediateData.is_send());
    }

    #[test]
    fn only_rfc5040_is_supported() {
        for raw in 0u8..16 {
            assert_eq!(Opcode::from_bits(raw).is_supported(), raw <= 7);
            assert_eq!(Opcode::from_bits(raw).is_rfc7306(), (8..=11).contains(&raw));
        }
    }

    #[test]
    fn display_names_unknown() {
        assert_eq!(Opcode::Unknown(0xd).to_string(), "Unknown opcode 0xd");
        assert_eq!(Opcode::Send.to_string(), "Send");
    }
}
