//! What the two perf processes tell each other.
//!
//! Test parameters and buffer advertisements travel in the MPA private
//! data, so no message precedes the measurement:
//! * the connect request carries a [`Hello`] (what to run, and the
//!   client's buffer where the server writes in write_lat);
//! * the accept carries a [`Welcome`] (the server's buffer and how many
//!   receives it keeps posted); a reject carries one with a non-zero status.
//!
//! During and after the run, SENDs with the solicited-event flag carry
//! [`Ctrl`] messages (receive credits, the client's totals, the server's
//! answer); data SENDs never set that flag, so a receiver tells them apart
//! without looking at bytes a later message may already have overwritten.
//!
//! All integers big-endian. Layouts:
//! ```text
//! Hello (48):   "IWPF" ver op qp_index:16 qp_count:16 tx_depth:16 size:32
//!               session:64 buf_addr:64 buf_rkey:32 buf_len:32 rx_slots:32 0:32
//! Welcome (32): "IWPF" ver status 0:16 buf_addr:64 buf_rkey:32 buf_len:32
//!               credits:32 0:32
//! Ctrl (32):    "IWPC" kind flags 0:16 a:64 b:64 c:64
//! ```

use super::op::Op;

pub const MAGIC: [u8; 4] = *b"IWPF";
pub const CTRL_MAGIC: [u8; 4] = *b"IWPC";
pub const VERSION: u8 = 1;
pub const HELLO_LEN: usize = 48;
pub const WELCOME_LEN: usize = 32;
pub const CTRL_LEN: usize = 32;

/// Why bytes from the peer are not a perf message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("{got} bytes, expected {want}")]
    Length { got: usize, want: usize },
    #[error("not an iwarp perf message (magic {0:02x?})")]
    Magic([u8; 4]),
    #[error("perf protocol version {0}, this side speaks {VERSION}")]
    Version(u8),
    #[error("unknown test code {0}")]
    Op(u8),
    #[error("unknown control message kind {0}")]
    Kind(u8),
    #[error("qp index {index} of {count}")]
    QpIndex { index: u16, count: u16 },
}

/// A buffer the peer may access: address (tagged offset), STag, length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Buf {
    pub addr: u64,
    pub rkey: u32,
    pub len: u32,
}

/// Reads big-endian integers at fixed offsets of a length-checked message.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn bytes<const N: usize>(&self, at: usize) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(src) = self.0.get(at..at + N) {
            out.copy_from_slice(src);
        }
        out
    }
    fn u8(&self, at: usize) -> u8 {
        self.0.get(at).copied().unwrap_or(0)
    }
    fn u16(&self, at: usize) -> u16 {
        u16::from_be_bytes(self.bytes(at))
    }
    fn u32(&self, at: usize) -> u32 {
        u32::from_be_bytes(self.bytes(at))
    }
    fn u64(&self, at: usize) -> u64 {
        u64::from_be_bytes(self.bytes(at))
    }
}

fn put(out: &mut [u8], at: usize, v: &[u8]) {
    out[at..at + v.len()].copy_from_slice(v);
}

fn check(bytes: &[u8], want: usize, magic: [u8; 4]) -> Result<Reader<'_>, WireError> {
    if bytes.len() != want {
        return Err(WireError::Length {
            got: bytes.len(),
            want,
        });
    }
    let r = Reader(bytes);
    let m = r.bytes::<4>(0);
    if m != magic {
        return Err(WireError::Magic(m));
    }
    Ok(r)
}

/// The client's connect request private data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hello {
    pub op: Op,
    /// This connection's index among the run's connections.
    pub qp_index: u16,
    pub qp_count: u16,
    pub tx_depth: u16,
    /// Message size in bytes.
    pub size: u32,
    /// Names the run: every connection of one client run carries the same.
    pub session: u64,
    /// The client's buffer the server may write (write_lat), else zero.
    pub buf: Buf,
    /// Receives the client keeps posted for control messages.
    pub rx_slots: u32,
}

impl Hello {
    pub fn parse(bytes: &[u8]) -> Result<Hello, WireError> {
        let r = check(bytes, HELLO_LEN, MAGIC)?;
        if r.u8(4) != VERSION {
            return Err(WireError::Version(r.u8(4)));
        }
        let op = Op::from_code(r.u8(5)).ok_or(WireError::Op(r.u8(5)))?;
        let (qp_index, qp_count) = (r.u16(6), r.u16(8));
        if qp_index >= qp_count {
            return Err(WireError::QpIndex {
                index: qp_index,
                count: qp_count,
            });
        }
        Ok(Hello {
            op,
            qp_index,
            qp_count,
            tx_depth: r.u16(10),
            size: r.u32(12),
            session: r.u64(16),
            buf: Buf {
                addr: r.u64(24),
                rkey: r.u32(32),
                len: r.u32(36),
            },
            rx_slots: r.u32(40),
        })
    }

    pub fn emit(&self, out: &mut [u8; HELLO_LEN]) {
        put(out, 0, &MAGIC);
        out[4] = VERSION;
        out[5] = self.op.code();
        put(out, 6, &self.qp_index.to_be_bytes());
        put(out, 8, &self.qp_count.to_be_bytes());
        put(out, 10, &self.tx_depth.to_be_bytes());
        put(out, 12, &self.size.to_be_bytes());
        put(out, 16, &self.session.to_be_bytes());
        put(out, 24, &self.buf.addr.to_be_bytes());
        put(out, 32, &self.buf.rkey.to_be_bytes());
        put(out, 36, &self.buf.len.to_be_bytes());
        put(out, 40, &self.rx_slots.to_be_bytes());
        put(out, 44, &[0; 4]);
    }

    pub fn to_vec(self) -> Vec<u8> {
        let mut out = [0u8; HELLO_LEN];
        self.emit(&mut out);
        out.to_vec()
    }
}

/// Why the server turned a connection down (a [`Welcome`]'s status).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Ok,
    /// The request was not a perf Hello this server understands.
    BadRequest,
    /// The server is running another client's test.
    Busy,
    /// The server could not set up the buffers.
    NoResources,
    Unknown(u8),
}

impl Status {
    pub const fn code(self) -> u8 {
        match self {
            Status::Ok => 0,
            Status::BadRequest => 1,
            Status::Busy => 2,
            Status::NoResources => 3,
            Status::Unknown(c) => c,
        }
    }

    pub const fn from_code(c: u8) -> Status {
        match c {
            0 => Status::Ok,
            1 => Status::BadRequest,
            2 => Status::Busy,
            3 => Status::NoResources,
            c => Status::Unknown(c),
        }
    }
}

/// The server's accept (or reject) private data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Welcome {
    pub status: Status,
    /// The server's buffer: WRITE target, READ source, write_lat sink.
    pub buf: Buf,
    /// Receives the server keeps posted for this connection's SENDs.
    pub credits: u32,
}

impl Welcome {
    pub fn refusal(status: Status) -> Welcome {
        Welcome {
            status,
            buf: Buf::default(),
            credits: 0,
        }
    }

    pub fn parse(bytes: &[u8]) -> Result<Welcome, WireError> {
        let r = check(bytes, WELCOME_LEN, MAGIC)?;
        if r.u8(4) != VERSION {
            return Err(WireError::Version(r.u8(4)));
        }
        Ok(Welcome {
            status: Status::from_code(r.u8(5)),
            buf: Buf {
                addr: r.u64(8),
                rkey: r.u32(16),
                len: r.u32(20),
            },
            credits: r.u32(24),
        })
    }

    pub fn emit(&self, out: &mut [u8; WELCOME_LEN]) {
        put(out, 0, &MAGIC);
        out[4] = VERSION;
        out[5] = self.status.code();
        put(out, 6, &[0; 2]);
        put(out, 8, &self.buf.addr.to_be_bytes());
        put(out, 16, &self.buf.rkey.to_be_bytes());
        put(out, 20, &self.buf.len.to_be_bytes());
        put(out, 24, &self.credits.to_be_bytes());
        put(out, 28, &[0; 4]);
    }

    pub fn to_vec(self) -> Vec<u8> {
        let mut out = [0u8; WELCOME_LEN];
        self.emit(&mut out);
        out.to_vec()
    }
}

/// Whether the receiver found the data it holds at the end as expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Mismatch,
    Match,
    /// Nothing to check in this test.
    NotApplicable,
}

impl Verdict {
    const fn code(self) -> u8 {
        match self {
            Verdict::Mismatch => 0,
            Verdict::Match => 1,
            Verdict::NotApplicable => 2,
        }
    }

    const fn from_code(c: u8) -> Verdict {
        match c {
            0 => Verdict::Mismatch,
            1 => Verdict::Match,
            _ => Verdict::NotApplicable,
        }
    }

    /// As JSON: true, false or null.
    pub fn json(self) -> &'static str {
        match self {
            Verdict::Mismatch => "false",
            Verdict::Match => "true",
            Verdict::NotApplicable => "null",
        }
    }
}

/// A control message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ctrl {
    /// Server → client: receives reposted so far (cumulative).
    Credit { returned: u64 },
    /// Client → server: the data phase is over.
    Done { msgs: u64, bytes: u64, nanos: u64 },
    /// Server → client: what the server saw, and its data check.
    Ack {
        msgs: u64,
        bytes: u64,
        nanos: u64,
        verdict: Verdict,
    },
}

impl Ctrl {
    pub fn parse(bytes: &[u8]) -> Result<Ctrl, WireError> {
        let r = check(bytes, CTRL_LEN, CTRL_MAGIC)?;
        let (a, b, c) = (r.u64(8), r.u64(16), r.u64(24));
        match r.u8(4) {
            1 => Ok(Ctrl::Credit { returned: a }),
            2 => Ok(Ctrl::Done {
                msgs: a,
                bytes: b,
                nanos: c,
            }),
            3 => Ok(Ctrl::Ack {
                msgs: a,
                bytes: b,
                nanos: c,
                verdict: Verdict::from_code(r.u8(5)),
            }),
            k => Err(WireError::Kind(k)),
        }
    }

    pub fn emit(&self, out: &mut [u8; CTRL_LEN]) {
        let (kind, flags, a, b, c) = match *self {
            Ctrl::Credit { returned } => (1, 0, returned, 0, 0),
            Ctrl::Done { msgs, bytes, nanos } => (2, 0, msgs, bytes, nanos),
            Ctrl::Ack {
                msgs,
                bytes,
                nanos,
                verdict,
            } => (3, verdict.code(), msgs, bytes, nanos),
        };
        put(out, 0, &CTRL_MAGIC);
        out[4] = kind;
        out[5] = flags;
        put(out, 6, &[0; 2]);
        put(out, 8, &a.to_be_bytes());
        put(out, 16, &b.to_be_bytes());
        put(out, 24, &c.to_be_bytes());
    }

    pub fn to_bytes(self) -> [u8; CTRL_LEN] {
        let mut out = [0u8; CTRL_LEN];
        self.emit(&mut out);
        out
    }
}

/// The data of a run: bytes both sides can compute from the session id,
/// so the receiver can check what arrived.
pub fn fill_pattern(seed: u64, buf: &mut [u8]) {
    // xorshift64*: cheap, and no two sessions share a pattern.
    let mut x = seed | 1;
    for chunk in buf.chunks_mut(8) {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        let v = x.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
}

pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut v = vec![0; len];
    fill_pattern(seed, &mut v);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hello() -> Hello {
        Hello {
            op: Op::Read,
            qp_index: 1,
            qp_count: 4,
            tx_depth: 128,
            size: 65536,
            session: 0x0102_0304_0506_0708,
            buf: Buf {
                addr: 0x0000_5566_7788_9900,
                rkey: 0x0000_0300,
                len: 65536,
            },
            rx_slots: 16,
        }
    }

    #[test]
    fn hello_byte_layout() {
        let mut out = [0xa5u8; HELLO_LEN];
        hello().emit(&mut out);
        let want: [u8; HELLO_LEN] = [
            b'I', b'W', b'P', b'F', 1, 2, 0, 1, 0, 4, 0, 128, 0, 1, 0, 0, // size
            1, 2, 3, 4, 5, 6, 7, 8, // session
            0, 0, 0x55, 0x66, 0x77, 0x88, 0x99, 0, // addr
            0, 0, 3, 0, 0, 1, 0, 0, // rkey, len
            0, 0, 0, 16, 0, 0, 0, 0, // rx slots, reserved
        ];
        assert_eq!(out, want);
        assert_eq!(Hello::parse(&want).unwrap(), hello());
    }

    #[test]
    fn welcome_byte_layout() {
        let w = Welcome {
            status: Status::Ok,
            buf: Buf {
                addr: 0x10,
                rkey: 0x0000_0500,
                len: 4096,
            },
            credits: 512,
        };
        let mut out = [0xa5u8; WELCOME_LEN];
        w.emit(&mut out);
        let want: [u8; WELCOME_LEN] = [
            b'I', b'W', b'P', b'F', 1, 0, 0, 0, // magic, version, status
            0, 0, 0, 0, 0, 0, 0, 0x10, // addr
            0, 0, 5, 0, 0, 0, 0x10, 0, // rkey, len
            0, 0, 2, 0, 0, 0, 0, 0, // credits, reserved
        ];
        assert_eq!(out, want);
        assert_eq!(Welcome::parse(&want).unwrap(), w);
        let busy = Welcome::refusal(Status::Busy).to_vec();
        assert_eq!(Welcome::parse(&busy).unwrap().status, Status::Busy);
    }

    #[test]
    fn ctrl_byte_layout() {
        let mut out = [0xa5u8; CTRL_LEN];
        Ctrl::Ack {
            msgs: 5,
            bytes: 0x0102,
            nanos: 7,
            verdict: Verdict::Match,
        }
        .emit(&mut out);
        let want: [u8; CTRL_LEN] = [
            b'I', b'W', b'P', b'C', 3, 1, 0, 0, // magic kind flags
            0, 0, 0, 0, 0, 0, 0, 5, // a
            0, 0, 0, 0, 0, 0, 1, 2, // b
            0, 0, 0, 0, 0, 0, 0, 7, // c
        ];
        assert_eq!(out, want);
    }

    #[test]
    fn bad_messages_are_typed_errors() {
        let h = hello().to_vec();
        assert_eq!(
            Hello::parse(&h[..47]),
            Err(WireError::Length { got: 47, want: 48 })
        );
        let mut m = h.clone();
        m[0] = b'X';
        assert!(matches!(Hello::parse(&m), Err(WireError::Magic(_))));
        let mut v = h.clone();
        v[4] = 9;
        assert_eq!(Hello::parse(&v), Err(WireError::Version(9)));
        let mut o = h.clone();
        o[5] = 0;
        assert_eq!(Hello::parse(&o), Err(WireError::Op(0)));
        let mut q = h.clone();
        q[7] = 4; // index 4 of 4
        assert_eq!(
            Hello::parse(&q),
            Err(WireError::QpIndex { index: 4, count: 4 })
        );
        let mut c = Ctrl::Credit { returned: 1 }.to_bytes();
        c[4] = 9;
        assert_eq!(Ctrl::parse(&c), Err(WireError::Kind(9)));
        assert!(Ctrl::parse(&hello().to_vec()[..32]).is_err(), "wrong magic");
        assert_eq!(
            Welcome::parse(&[]),
            Err(WireError::Length { got: 0, want: 32 })
        );
    }

    #[test]
    fn unknown_status_codes_are_kept() {
        let mut w = Welcome::refusal(Status::Ok).to_vec();
        w[5] = 77;
        assert_eq!(Welcome::parse(&w).unwrap().status, Status::Unknown(77));
        assert_eq!(Status::Unknown(77).code(), 77);
    }

    #[test]
    fn patterns_are_deterministic_and_differ_by_seed() {
        assert_eq!(pattern(1, 100), pattern(1, 100));
        assert_ne!(pattern(1, 100), pattern(2, 100));
        assert_eq!(pattern(5, 13)[..], pattern(5, 64)[..13]);
        assert!(pattern(0, 0).is_empty());
    }

    fn any_op() -> impl Strategy<Value = Op> {
        (0usize..6).prop_map(|i| Op::ALL[i])
    }

    proptest! {
        #[test]
        fn hello_round_trips(op in any_op(), count in 1u16.., idx: u16, tx: u16, size: u32,
                             session: u64, addr: u64, rkey: u32, len: u32, rx: u32) {
            let h = Hello { op, qp_index: idx % count, qp_count: count, tx_depth: tx, size,
                            session, buf: Buf { addr, rkey, len }, rx_slots: rx };
            prop_assert_eq!(Hello::parse(&h.to_vec()).unwrap(), h);
        }

        #[test]
        fn welcome_round_trips(status: u8, addr: u64, rkey: u32, len: u32, credits: u32) {
            let w = Welcome { status: Status::from_code(status), buf: Buf { addr, rkey, len }, credits };
            prop_assert_eq!(Welcome::parse(&w.to_vec()).unwrap(), w);
        }

        #[test]
        fn ctrl_round_trips(kind in 0u8..3, a: u64, b: u64, c: u64, v in 0u8..3) {
            let m = match kind {
                0 => Ctrl::Credit { returned: a },
                1 => Ctrl::Done { msgs: a, bytes: b, nanos: c },
                _ => Ctrl::Ack { msgs: a, bytes: b, nanos: c, verdict: Verdict::from_code(v) },
            };
            prop_assert_eq!(Ctrl::parse(&m.to_bytes()).unwrap(), m);
        }

        #[test]
        fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = Hello::parse(&bytes);
            let _ = Welcome::parse(&bytes);
            let _ = Ctrl::parse(&bytes);
        }
    }
}
