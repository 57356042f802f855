//! Writing classic pcap files (nanosecond magic, host byte order left to
//! the reader: we write little-endian). Used to build test captures and by
//! tools that record their own traffic.

use std::io::{self, Write};

use super::{LinkType, Timestamp};

/// Largest snapshot length we announce.
const SNAPLEN: u32 = 262_144;

/// Streams packets into a classic pcap file.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header for `link` frames with nanosecond timestamps.
    pub fn new(mut out: W, link: LinkType) -> io::Result<Self> {
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&super::classic::MAGIC_NANOS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        h[16..20].copy_from_slice(&SNAPLEN.to_le_bytes());
        h[20..24].copy_from_slice(&u32::from(link.0).to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out })
    }

    /// Appends one packet; frames over the snapshot length are refused.
    pub fn packet(&mut self, time: Timestamp, frame: &[u8]) -> io::Result<()> {
        let len = u32::try_from(frame.len())
            .ok()
            .filter(|&l| l <= SNAPLEN)
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "frame longer than the snapshot length",
                )
            })?;
        let secs = u32::try_from(time.secs())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "timestamp beyond 2106"))?;
        let mut r = [0u8; 16];
        r[0..4].copy_from_slice(&secs.to_le_bytes());
        r[4..8].copy_from_slice(&time.subsec_nanos().to_le_bytes());
        r[8..12].copy_from_slice(&len.to_le_bytes());
        r[12..16].copy_from_slice(&len.to_le_bytes());
        self.out.write_all(&r)?;
        self.out.write_all(frame)
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap::CaptureReader;

    #[test]
    fn written_files_read_back() {
        let mut w = PcapWriter::new(Vec::new(), LinkType::ETHERNET).unwrap();
        w.packet(Timestamp::new(5, 123_456_789), b"one").unwrap();
        w.packet(Timestamp::new(6, 0), &[0xa5; 1500]).unwrap();
        let bytes = w.into_inner();
        let mut r = CaptureReader::new(&bytes[..]).unwrap();
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(
            (p.timestamp, p.data, p.link),
            (
                Timestamp::new(5, 123_456_789),
                &b"one"[..],
                LinkType::ETHERNET
            )
        );
        let p = r.next_packet().unwrap().unwrap();
        assert_eq!(p.data.len(), 1500);
        assert!(r.next_packet().unwrap().is_none());
    }

    #[test]
    fn oversized_frames_and_far_future_times_are_refused() {
        let mut w = PcapWriter::new(Vec::new(), LinkType::RAW).unwrap();
        assert!(w.packet(Timestamp::new(0, 0), &vec![0; 300_000]).is_err());
        assert!(w.packet(Timestamp::new(1 << 33, 0), b"x").is_err());
        assert_eq!(w.into_inner().len(), 24);
    }
}
