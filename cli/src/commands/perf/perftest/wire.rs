//! The messages perftest's programs trade over their rdma_cm control
//! connection (`-R`), byte for byte as perftest 6.x lays them out.
//!
//! Every message is one SEND into the one receive the peer keeps posted
//! (56 bytes, `sizeof(struct pingpong_dest)` on x86-64). The client sends
//! first and then receives; the server receives first and then answers, so
//! the two ends move in lock step. What goes over it, in order:
//!
//! * the version string, 16 bytes, NUL-padded (`"6.06"`);
//! * the page size and cache line size, each a big-endian `int`;
//! * the MTU as two bytes of `sprintf("%d")` (for iWARP an `ibv_mtu` code);
//! * [`PingpongDest`] handshakes: before and after the test connections
//!   are made, and with each side's buffer (STag, address) once they are;
//! * bandwidth reports after WRITE and READ tests: [`BwReport`], five
//!   big-endian 8-byte values, one SEND each.
//!
//! The SEND test paces the sender with credits the receiver RDMA WRITEs
//! into a 4-byte counter the sender advertised: the receiver's running
//! receive count in the host's (little-endian) byte order.

/// perftest's version string, as `exchange_versions` sends it.
pub const VERSION: &str = "6.06";
/// Bytes of the version message (`MAX_VERSION`).
pub const VERSION_LEN: usize = 16;
/// Bytes of a [`PingpongDest`], and of the receive each side keeps posted.
pub const DEST_LEN: usize = 56;
/// The oldest peer version perftest accepts (`check_version_compatibility`).
pub const MIN_PEER_VERSION: f64 = 5.70;
/// What perftest sends as its MTU on iWARP: `IBV_MTU_1024`'s code.
pub const MTU_CODE: u8 = 3;

/// Why bytes from the peer are not the message expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("{what}: {got} bytes, expected {want}")]
    Length {
        what: &'static str,
        got: usize,
        want: usize,
    },
    #[error("peer version {0:?} is older than perftest 5.70")]
    OldVersion(String),
    #[error("peer version {0:?} is not a number")]
    BadVersion(String),
}

fn exact<'a>(what: &'static str, b: &'a [u8], want: usize) -> Result<&'a [u8], WireError> {
    if b.len() < want {
        return Err(WireError::Length {
            what,
            got: b.len(),
            want,
        });
    }
    Ok(&b[..want])
}

fn be32(b: &[u8], at: usize) -> u32 {
    let mut x = [0u8; 4];
    x.copy_from_slice(&b[at..at + 4]);
    u32::from_be_bytes(x)
}

fn be64(b: &[u8], at: usize) -> u64 {
    let mut x = [0u8; 8];
    x.copy_from_slice(&b[at..at + 8]);
    u64::from_be_bytes(x)
}

/// The version message: the string, NUL-padded to 16 bytes.
pub fn version_message() -> [u8; VERSION_LEN] {
    let mut m = [0u8; VERSION_LEN];
    m[..VERSION.len()].copy_from_slice(VERSION.as_bytes());
    m
}

/// The peer's version, checked the way perftest checks it (`atof` >= 5.70).
pub fn parse_version(b: &[u8]) -> Result<String, WireError> {
    let b = exact("version", b, VERSION_LEN)?;
    let end = b.iter().position(|&c| c == 0).unwrap_or(b.len());
    let s = String::from_utf8_lossy(&b[..end]).into_owned();
    // atof reads the longest numeric prefix ("6.06", "5.70-rc1").
    let num: String = s
        .chars()
        .take_while(|c| c.is_ascii_digit() || *c == '.')
        .collect();
    let v: f64 = num.parse().map_err(|_| WireError::BadVersion(s.clone()))?;
    if v < MIN_PEER_VERSION {
        return Err(WireError::OldVersion(s));
    }
    Ok(s)
}

/// A big-endian `int` (page size, cache line size).
pub fn int_message(v: u32) -> [u8; 4] {
    v.to_be_bytes()
}

pub fn parse_int(what: &'static str, b: &[u8]) -> Result<u32, WireError> {
    Ok(be32(exact(what, b, 4)?, 0))
}

/// The MTU message: `sprintf(cur, "%d", mtu)` cut to two bytes.
pub fn mtu_message(code: u8) -> [u8; 2] {
    let s = code.to_string();
    let mut m = [0u8; 2];
    for (d, c) in m.iter_mut().zip(s.bytes()) {
        *d = c;
    }
    m
}

/// The peer's MTU code (`strtol` of the two bytes; 0 if not a number).
pub fn parse_mtu(b: &[u8]) -> Result<u8, WireError> {
    let b = exact("mtu", b, 2)?;
    let digits: String = b
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .map(|&c| c as char)
        .collect();
    Ok(digits.parse().unwrap_or(0))
}

/// `struct pingpong_dest` as `rdma_write_keys` sends it: the integers
/// converted to big-endian, the GID as raw bytes, the padding before
/// `vaddr` and the two words after the GID not converted (perftest
/// leaves them as they are, padding uninitialised).
///
/// ```text
/// 0 lid  4 out_reads  8 qpn  12 psn  16 rkey  20 (pad)  24 vaddr:64
/// 32 gid[16]  48 srqn  52 gid_index
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PingpongDest {
    pub lid: u32,
    pub out_reads: u32,
    pub qpn: u32,
    pub psn: u32,
    pub rkey: u32,
    pub vaddr: u64,
    pub gid: [u8; 16],
}

impl PingpongDest {
    pub fn parse(b: &[u8]) -> Result<PingpongDest, WireError> {
        let b = exact("pingpong_dest", b, DEST_LEN)?;
        let mut gid = [0u8; 16];
        gid.copy_from_slice(&b[32..48]);
        Ok(PingpongDest {
            lid: be32(b, 0),
            out_reads: be32(b, 4),
            qpn: be32(b, 8),
            psn: be32(b, 12),
            rkey: be32(b, 16),
            vaddr: be64(b, 24),
            gid,
        })
    }

    pub fn to_bytes(self) -> [u8; DEST_LEN] {
        let mut b = [0u8; DEST_LEN];
        b[0..4].copy_from_slice(&self.lid.to_be_bytes());
        b[4..8].copy_from_slice(&self.out_reads.to_be_bytes());
        b[8..12].copy_from_slice(&self.qpn.to_be_bytes());
        b[12..16].copy_from_slice(&self.psn.to_be_bytes());
        b[16..20].copy_from_slice(&self.rkey.to_be_bytes());
        b[24..32].copy_from_slice(&self.vaddr.to_be_bytes());
        b[32..48].copy_from_slice(&self.gid);
        b
    }
}

/// `struct bw_report_data` as `xchg_bw_reports` sends it: five values,
/// each byte-swapped to big-endian and sent on its own.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BwReport {
    pub size: u64,
    pub iters: u64,
    /// Peak bandwidth in the sender's unit (MB/s or Gb/s, as it reports).
    pub bw_peak: f64,
    pub bw_avg: f64,
    /// Millions of messages per second.
    pub msg_rate: f64,
}

impl BwReport {
    /// The five messages in the order they are exchanged.
    pub fn messages(&self) -> [[u8; 8]; 5] {
        [
            self.size.to_be_bytes(),
            self.iters.to_be_bytes(),
            self.bw_peak.to_bits().to_be_bytes(),
            self.bw_avg.to_bits().to_be_bytes(),
            self.msg_rate.to_bits().to_be_bytes(),
        ]
    }

    /// The report from its five messages.
    pub fn parse(msgs: &[Vec<u8>]) -> Result<BwReport, WireError> {
        let mut v = [0u64; 5];
        if msgs.len() != 5 {
            return Err(WireError::Length {
                what: "bandwidth report",
                got: msgs.len(),
                want: 5,
            });
        }
        for (out, m) in v.iter_mut().zip(msgs) {
            *out = be64(exact("bandwidth report", m, 8)?, 0);
        }
        Ok(BwReport {
            size: v[0],
            iters: v[1],
            bw_peak: f64::from_bits(v[2]),
            bw_avg: f64::from_bits(v[3]),
            msg_rate: f64::from_bits(v[4]),
        })
    }

    /// Payload bytes the report accounts for, if its figures are sane
    /// (a perftest server sends whatever its stack held: garbage).
    pub fn bytes(&self) -> Option<u64> {
        self.size.checked_mul(self.iters)
    }
}

/// A SEND-credit value as the receiver writes it (x86 byte order).
pub fn credit_bytes(received: u64) -> [u8; 4] {
    (received as u32).to_le_bytes()
}

pub fn parse_credit(b: &[u8]) -> u32 {
    let mut x = [0u8; 4];
    if let Some(src) = b.get(..4) {
        x.copy_from_slice(src);
    }
    u32::from_le_bytes(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Decodes a hex string (test fixtures).
    fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    // SEND payloads from an `ib_write_bw -R -s 16384 -n 5` run between two
    // siw hosts (perftest 6.06, rdma-core 44): the 18-byte DDP/RDMAP header
    // and the CRC stripped.
    const VERSION_FIXTURE: &str = "362e3036000000000000000000000000";
    const PAGE_SIZE_FIXTURE: &str = "00001000";
    const CACHE_LINE_FIXTURE: &str = "00000040";
    const MTU_FIXTURE: &str = "3300";
    /// The client's QP after the test connection came up (note the
    /// uninitialised padding `dd7f0000` at offset 20).
    const DEST_FIXTURE: &str = "000000000000000100000002\
        00cb89039a622000dd7f0000000055b1bfcf5000\
        5254009900030000000000000000000000000000\
        00000000";
    /// The same from a READ test: out_reads 128.
    const READ_DEST_FIXTURE: &str = "000000000000008000000002\
        003df82ef597ea005b7f000000005566e1bcd000\
        5254009900020000000000000000000000000000\
        00000000";

    #[test]
    fn version_matches_perftest_bytes() {
        assert_eq!(version_message().to_vec(), hex(VERSION_FIXTURE));
        assert_eq!(parse_version(&hex(VERSION_FIXTURE)).unwrap(), "6.06");
    }

    #[test]
    fn old_or_garbled_versions_are_refused() {
        let mut m = [0u8; 16];
        m[..4].copy_from_slice(b"5.60");
        assert_eq!(parse_version(&m), Err(WireError::OldVersion("5.60".into())));
        m[..4].copy_from_slice(b"abcd");
        assert!(matches!(parse_version(&m), Err(WireError::BadVersion(_))));
        assert!(matches!(
            parse_version(&m[..8]),
            Err(WireError::Length { .. })
        ));
    }

    #[test]
    fn system_data_and_mtu_match_perftest_bytes() {
        assert_eq!(int_message(4096).to_vec(), hex(PAGE_SIZE_FIXTURE));
        assert_eq!(int_message(64).to_vec(), hex(CACHE_LINE_FIXTURE));
        assert_eq!(parse_int("page", &hex(PAGE_SIZE_FIXTURE)).unwrap(), 4096);
        assert_eq!(mtu_message(MTU_CODE).to_vec(), hex(MTU_FIXTURE));
        assert_eq!(parse_mtu(&hex(MTU_FIXTURE)).unwrap(), 3);
        assert_eq!(parse_mtu(b"\0\0").unwrap(), 0);
    }

    #[test]
    fn pingpong_dest_decodes_a_siw_handshake() {
        let d = PingpongDest::parse(&hex(DEST_FIXTURE)).unwrap();
        assert_eq!(d.lid, 0);
        assert_eq!(d.out_reads, 1);
        assert_eq!(d.qpn, 2);
        assert_eq!(d.psn, 0xcb8903);
        assert_eq!(d.rkey, 0x9a62_2000);
        assert_eq!(d.vaddr, 0x55b1_bfcf_5000);
        assert_eq!(&d.gid[..6], &[0x52, 0x54, 0x00, 0x99, 0x00, 0x03]);
        let r = PingpongDest::parse(&hex(READ_DEST_FIXTURE)).unwrap();
        assert_eq!(r.out_reads, 128);
        assert_eq!(r.rkey, 0xf597_ea00);
        assert_eq!(r.vaddr, 0x5566_e1bc_d000);
    }

    #[test]
    fn pingpong_dest_round_trips_except_padding() {
        let d = PingpongDest::parse(&hex(DEST_FIXTURE)).unwrap();
        let b = d.to_bytes();
        let mut want = hex(DEST_FIXTURE);
        want[20..24].fill(0);
        assert_eq!(b.to_vec(), want);
        assert!(matches!(
            PingpongDest::parse(&b[..40]),
            Err(WireError::Length { got: 40, .. })
        ));
    }

    #[test]
    fn bw_report_matches_perftest_bytes() {
        // The client's report from the same run: 16384 bytes, 5 iterations,
        // then bw_peak as a big-endian double.
        let msgs = [
            hex("0000000000004000"),
            hex("0000000000000005"),
            hex("403a0af75d8f50dd"),
            hex("3ffee904fed3181a"),
            hex("3f2034b3802da994"),
        ];
        let r = BwReport::parse(&msgs).unwrap();
        assert_eq!(r.size, 16384);
        assert_eq!(r.iters, 5);
        assert!((r.bw_peak - 26.04).abs() < 0.01, "{}", r.bw_peak);
        assert!(r.bw_avg > 1.9 && r.bw_avg < 2.0, "{}", r.bw_avg);
        assert_eq!(r.bytes(), Some(81920));
        let again: Vec<Vec<u8>> = r.messages().iter().map(|m| m.to_vec()).collect();
        assert_eq!(again, msgs.to_vec());
        assert!(BwReport::parse(&msgs[..4]).is_err());
    }

    #[test]
    fn credits_are_little_endian_counts() {
        // A siw receiver's credit WRITE in an ib_send_bw run: 2 receives.
        assert_eq!(credit_bytes(2).to_vec(), hex("02000000"));
        assert_eq!(parse_credit(&hex("02000000")), 2);
        assert_eq!(credit_bytes(0x1_0000_0003).to_vec(), hex("03000000"));
    }
}
