//! The RFC 6581 IRD/ORD block: the first four octets of private data when a
//! Request/Reply carries the "enhanced" flag.
//!
//! ```text
//!  0                   1                   2                   3
//!  0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1 2 3 4 5 6 7 8 9 0 1
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! |A|B|           IRD             |C|D|           ORD             |
//! +-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+-+
//! A: peer-to-peer   B: zero-length SEND RTR
//! C: zero-length RDMA WRITE RTR   D: zero-length RDMA READ RTR
//! ```

use core::fmt;

use super::Error;

/// Size of the IRD/ORD block on the wire.
pub const IRD_ORD_LEN: usize = 4;

/// Largest IRD or ORD value the 14-bit fields carry.
pub const IRD_ORD_MAX: u16 = 0x3fff;

mod bits {
    /// In the IRD word: the sender wants the peer-to-peer model (an RTR).
    pub const PEER_TO_PEER: u16 = 0x8000;
    /// In the IRD word: zero-length SEND as the RTR.
    pub const SEND_RTR: u16 = 0x4000;
    /// In the ORD word: zero-length RDMA WRITE as the RTR.
    pub const WRITE_RTR: u16 = 0x8000;
    /// In the ORD word: zero-length RDMA READ as the RTR.
    pub const READ_RTR: u16 = 0x4000;
    pub const VALUE: u16 = super::IRD_ORD_MAX;
}

/// The zero-length message the initiator sends first in peer-to-peer mode
/// (the "ready to receive" that lets the responder enter RTS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Rtr {
    /// A zero-length SEND (consumes a posted receive at the responder).
    Send,
    /// A zero-length RDMA WRITE.
    Write,
    /// A zero-length RDMA READ.
    Read,
}

impl Rtr {
    /// The order in which a responder picks among the kinds both sides allow:
    /// WRITE first (no resources at the responder), then READ, then SEND
    /// (which would need a posted receive), as siw does.
    pub const PREFERENCE: [Rtr; 3] = [Rtr::Write, Rtr::Read, Rtr::Send];
}

impl fmt::Display for Rtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Rtr::Send => "SEND",
            Rtr::Write => "WRITE",
            Rtr::Read => "READ",
        })
    }
}

/// A set of RTR kinds: in a request, those the initiator can send; in a
/// reply, the one the responder chose.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RtrSet {
    /// Zero-length SEND.
    pub send: bool,
    /// Zero-length RDMA WRITE.
    pub write: bool,
    /// Zero-length RDMA READ.
    pub read: bool,
}

impl RtrSet {
    /// No RTR kind.
    pub const EMPTY: RtrSet = RtrSet {
        send: false,
        write: false,
        read: false,
    };
    /// Every RTR kind.
    pub const ALL: RtrSet = RtrSet {
        send: true,
        write: true,
        read: true,
    };

    /// The set holding only `rtr`.
    pub const fn only(rtr: Rtr) -> RtrSet {
        RtrSet {
            send: matches!(rtr, Rtr::Send),
            write: matches!(rtr, Rtr::Write),
            read: matches!(rtr, Rtr::Read),
        }
    }

    /// True when `rtr` is in the set.
    pub const fn contains(self, rtr: Rtr) -> bool {
        match rtr {
            Rtr::Send => self.send,
            Rtr::Write => self.write,
            Rtr::Read => self.read,
        }
    }

    /// True when the set holds no kind.
    pub const fn is_empty(self) -> bool {
        !(self.send || self.write || self.read)
    }

    /// The kinds in both sets.
    pub const fn intersection(self, other: RtrSet) -> RtrSet {
        RtrSet {
            send: self.send && other.send,
            write: self.write && other.write,
            read: self.read && other.read,
        }
    }

    /// The first kind of [`Rtr::PREFERENCE`] in the set.
    pub fn preferred(self) -> Option<Rtr> {
        Rtr::PREFERENCE.into_iter().find(|r| self.contains(*r))
    }
}

impl FromIterator<Rtr> for RtrSet {
    fn from_iter<I: IntoIterator<Item = Rtr>>(iter: I) -> Self {
        let mut set = RtrSet::EMPTY;
        for rtr in iter {
            match rtr {
                Rtr::Send => set.send = true,
                Rtr::Write => set.write = true,
                Rtr::Read => set.read = true,
            }
        }
        set
    }
}

/// The decoded IRD/ORD block.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IrdOrd {
    /// Inbound RDMA READ depth: READs the sender accepts at once (14 bits).
    pub ird: u16,
    /// Outbound RDMA READ depth: READs the sender wants to issue (14 bits).
    pub ord: u16,
    /// The A bit: the peer-to-peer model, with an RTR from the initiator.
    pub peer_to_peer: bool,
    /// The B/C/D bits.
    pub rtr: RtrSet,
}

impl IrdOrd {
    /// Decodes the block from its four octets.
    pub fn parse(bytes: [u8; IRD_ORD_LEN]) -> IrdOrd {
        let ird = u16::from_be_bytes([bytes[0], bytes[1]]);
        let ord = u16::from_be_bytes([bytes[2], bytes[3]]);
        IrdOrd {
            ird: ird & bits::VALUE,
            ord: ord & bits::VALUE,
            peer_to_peer: ird & bits::PEER_TO_PEER != 0,
            rtr: RtrSet {
                send: ird & bits::SEND_RTR != 0,
                write: ord & bits::WRITE_RTR != 0,
                read: ord & bits::READ_RTR != 0,
            },
        }
    }

    /// Decodes the block from the start of `data` (the private data).
    pub fn parse_prefix(data: &[u8]) -> Result<IrdOrd, Error> {
        match data.first_chunk::<IRD_ORD_LEN>() {
            Some(bytes) => Ok(IrdOrd::parse(*bytes)),
            None => Err(Error::EnhancedTooShort {
                pd_length: data.len(),
            }),
        }
    }

    /// Encodes the block; fails when IRD or ORD does not fit 14 bits.
    pub fn to_bytes(&self) -> Result<[u8; IRD_ORD_LEN], Error> {
        if self.ird > IRD_ORD_MAX || self.ord > IRD_ORD_MAX {
            return Err(Error::IrdOrdOutOfRange {
                ird: self.ird,
                ord: self.ord,
            });
        }
        let mut ird = self.ird;
        let mut ord = self.ord;
        if self.peer_to_peer {
            ird |= bits::PEER_TO_PEER;
        }
        if self.rtr.send {
            ird |= bits::SEND_RTR;
        }
        if self.rtr.write {
            ord |= bits::WRITE_RTR;
        }
        if self.rtr.read {
            ord |= bits::READ_RTR;
        }
        let [i0, i1] = ird.to_be_bytes();
        let [o0, o1] = ord.to_be_bytes();
        Ok([i0, i1, o0, o1])
    }
}

impl fmt::Display for IrdOrd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ird {} ord {}", self.ird, self.ord)?;
        if self.peer_to_peer {
            f.write_str(" peer2peer")?;
        }
        for rtr in Rtr::PREFERENCE {
            if self.rtr.contains(rtr) {
                write!(f, " {rtr}-RTR")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_ird_ord() -> impl Strategy<Value = IrdOrd> {
        (
            0..=IRD_ORD_MAX,
            0..=IRD_ORD_MAX,
            any::<bool>(),
            any::<(bool, bool, bool)>(),
        )
            .prop_map(|(ird, ord, peer_to_peer, (send, write, read))| IrdOrd {
                ird,
                ord,
                peer_to_peer,
                rtr: RtrSet { send, write, read },
            })
    }

    #[test]
    fn rping_default_block() {
        // rping-default.pcap, MPA request: IRD 1, ORD 1, client/server model.
        let b = IrdOrd::parse([0x00, 0x01, 0x00, 0x01]);
        assert_eq!(
            b,
            IrdOrd {
                ird: 1,
                ord: 1,
                peer_to_peer: false,
                rtr: RtrSet::EMPTY
            }
        );
    }

    #[test]
    fn rping_cxgb_request_block() {
        // rping-cxgb.pcap, MPA request: 80 01 c0 01 = P2P, WRITE and READ RTR.
        let b = IrdOrd::parse([0x80, 0x01, 0xc0, 0x01]);
        assert!(b.peer_to_peer);
        assert_eq!((b.ird, b.ord), (1, 1));
        assert_eq!(
            b.rtr,
            RtrSet {
                send: false,
                write: true,
                read: true
            }
        );
        assert_eq!(b.to_bytes(), Ok([0x80, 0x01, 0xc0, 0x01]));
    }

    #[test]
    fn rping_cxgb_reply_block() {
        // rping-cxgb.pcap, MPA reply: 80 01 80 01 = P2P, WRITE RTR chosen.
        let b = IrdOrd::parse([0x80, 0x01, 0x80, 0x01]);
        assert_eq!(b.rtr, RtrSet::only(Rtr::Write));
        assert_eq!(b.rtr.preferred(), Some(Rtr::Write));
    }

    #[test]
    fn send_rtr_lives_in_the_ird_word() {
        let b = IrdOrd {
            ird: 0,
            ord: 0,
            peer_to_peer: true,
            rtr: RtrSet::only(Rtr::Send),
        };
        assert_eq!(b.to_bytes(), Ok([0xc0, 0x00, 0x00, 0x00]));
    }

    #[test]
    fn read_rtr_bit() {
        let b = IrdOrd {
            ird: 0x3fff,
            ord: 0x1234,
            peer_to_peer: false,
            rtr: RtrSet::only(Rtr::Read),
        };
        assert_eq!(b.to_bytes(), Ok([0x3f, 0xff, 0x52, 0x34]));
    }

    #[test]
    fn out_of_range_values_are_refused() {
        let b = IrdOrd {
            ird: 0x4000,
            ..IrdOrd::default()
        };
        assert!(matches!(b.to_bytes(), Err(Error::IrdOrdOutOfRange { .. })));
        let b = IrdOrd {
            ord: 0xffff,
            ..IrdOrd::default()
        };
        assert!(b.to_bytes().is_err());
    }

    #[test]
    fn prefix_too_short() {
        assert_eq!(
            IrdOrd::parse_prefix(&[1, 2, 3]),
            Err(Error::EnhancedTooShort { pd_length: 3 })
        );
        assert!(IrdOrd::parse_prefix(&[0, 1, 0, 1, 9]).is_ok());
    }

    #[test]
    fn preference_order_is_write_read_send() {
        assert_eq!(RtrSet::ALL.preferred(), Some(Rtr::Write));
        let rs = RtrSet {
            send: true,
            write: false,
            read: true,
        };
        assert_eq!(rs.preferred(), Some(Rtr::Read));
        assert_eq!(RtrSet::only(Rtr::Send).preferred(), Some(Rtr::Send));
        assert_eq!(RtrSet::EMPTY.preferred(), None);
    }

    #[test]
    fn set_operations() {
        let a: RtrSet = [Rtr::Write, Rtr::Read].into_iter().collect();
        let b: RtrSet = [Rtr::Read, Rtr::Send].into_iter().collect();
        assert_eq!(a.intersection(b), RtrSet::only(Rtr::Read));
        assert!(RtrSet::EMPTY.is_empty());
        assert!(!a.is_empty());
    }

    #[test]
    fn display() {
        let b = IrdOrd::parse([0x80, 0x01, 0xc0, 0x02]);
        assert_eq!(b.to_string(), "ird 1 ord 2 peer2peer WRITE-RTR READ-RTR");
    }

    proptest! {
        #[test]
        fn parse_of_encode_is_identity(b in arb_ird_ord()) {
            let bytes = b.to_bytes().expect("in range");
            prop_assert_eq!(IrdOrd::parse(bytes), b);
        }

        #[test]
        fn encode_of_parse_is_identity(bytes in any::<[u8; 4]>()) {
            prop_assert_eq!(IrdOrd::parse(bytes).to_bytes(), Ok(bytes));
        }
    }
}
