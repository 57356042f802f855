//! Writing classic pcap files: nanosecond magic, little-endian (readers
//! detect the byte order from the magic). The one writer of the stack: the
//! transports record their traffic through it ([`super::PcapSink`]), tests
//! and tools build captures with it.

use std::io::{self, Write};

use super::classic::{FILE_HEADER_LEN, MAGIC_NANOS, RECORD_HEADER_LEN};
use super::{LinkType, Timestamp};

/// Largest snapshot length readers accept (libpcap's MAXIMUM_SNAPLEN).
pub const MAX_SNAPLEN: u32 = 262_144;

/// Streams packets into a classic pcap file.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    snaplen: u32,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header for `link` frames, snapshot length
    /// [`MAX_SNAPLEN`].
    pub fn new(out: W, link: LinkType) -> io::Result<Self> {
        Self::with_snaplen(out, link, MAX_SNAPLEN)
    }

    /// Writes the file header; `snaplen` is clamped to 1..=[`MAX_SNAPLEN`].
    pub fn with_snaplen(mut out: W, link: LinkType, snaplen: u32) -> io::Result<Self> {
        let snaplen = snaplen.clamp(1, MAX_SNAPLEN);
        let mut h = [0u8; FILE_HEADER_LEN];
        h[0..4].copy_from_slice(&MAGIC_NANOS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone and sigfigs stay 0.
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&u32::from(link.0).to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out, snaplen })
    }

    /// Appends one packet captured at `time`. A frame longer than the
    /// snapshot length is cut to it and keeps its original length, as
    /// libpcap records it; a time past 2106 (beyond the 32-bit seconds
    /// field) is refused before anything is written.
    pub fn packet(&mut self, time: Timestamp, frame: &[u8]) -> io::Result<()> {
        let secs = u32::try_from(time.secs())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "timestamp beyond 2106"))?;
        let original = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        let captured = original.min(self.snaplen);
        let mut r = [0u8; RECORD_HEADER_LEN];
        r[0..4].copy_from_slice(&secs.to_le_bytes());
        r[4..8].copy_from_slice(&time.subsec_nanos().to_le_bytes());
        r[8..12].copy_from_slice(&captured.to_le_bytes());
        r[12..16].copy_from_slice(&original.to_le_bytes());
        self.out.write_all(&r)?;
        self.out.write_all(&frame[..captured as usize])
    }

    /// Pushes buffered records to the writer underneath.
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// The writer underneath, records written so far included.
    pub fn into_inner(self) -> W {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcap::{CaptureReader, Format, Resolution};

    #[test]
    fn file_header_is_byte_exact() {
        let w = PcapWriter::with_snaplen(Vec::new(), LinkType::ETHERNET, 65535).unwrap();
        assert_eq!(
            w.into_inner(),
            [
                0x4d, 0x3c, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0,
                0, 0
            ]
        );
    }

    #[test]
    fn record_is_byte_exact() {
        let mut w = PcapWriter::new(Vec::new(), LinkType::ETHERNET).unwrap();
        w.packet(Timestamp::new(0x0102_0304, 5_000), &[0xaa, 0xbb, 0xcc])
            .unwrap();
        let out = w.into_inner();
        assert_eq!(
            &out[FILE_HEADER_LEN..],
            [0x04, 0x03, 0x02, 0x01, 0x88, 0x13, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 0xaa, 0xbb, 0xcc]
        );
    }

    #[test]
    fn written_files_read_back() {
        let mut w = PcapWriter::new(Vec::new(), LinkType::ETHERNET).unwrap();
        w.packet(Timestamp::new(5, 123_456_789), b"one").unwrap();
        w.packet(Timestamp::new(6, 0), &[0xa5; 1500]).unwrap();
        let bytes = w.into_inner();
        let mut r = CaptureReader::new(&bytes[..]).unwrap();
        let Format::Pcap(h) = r.format() else {
            panic!("classic pcap expected")
        };
        assert_eq!(
            (h.resolution, h.snaplen, h.link),
            (Resolution::NANOS, MAX_SNAPLEN, LinkType::ETHERNET)
        );
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
    fn frames_longer_than_snaplen_are_cut_but_keep_length() {
        let mut w = PcapWriter::with_snaplen(Vec::new(), LinkType::ETHERNET, 4).unwrap();
        w.packet(Timestamp::default(), &[1, 2, 3, 4, 5, 6]).unwrap();
        let mut w2 = PcapWriter::new(Vec::new(), LinkType::RAW).unwrap();
        w2.packet(Timestamp::default(), &vec![7; 300_000]).unwrap();
        for (bytes, cut, whole) in [(w.into_inner(), 4, 6), (w2.into_inner(), 262_144, 300_000)] {
            let mut r = CaptureReader::new(&bytes[..]).unwrap();
            let p = r.next_packet().unwrap().unwrap();
            assert_eq!((p.data.len(), p.original_len), (cut, whole));
        }
    }

    #[test]
    fn snaplen_is_clamped() {
        for (asked, got) in [(0, 1), (u32::MAX, MAX_SNAPLEN)] {
            let w = PcapWriter::with_snaplen(Vec::new(), LinkType::ETHERNET, asked).unwrap();
            let bytes = w.into_inner();
            let r = CaptureReader::new(&bytes[..]).unwrap();
            assert!(matches!(r.format(), Format::Pcap(h) if h.snaplen == got));
        }
    }

    #[test]
    fn far_future_times_are_refused_and_write_nothing() {
        let mut w = PcapWriter::new(Vec::new(), LinkType::RAW).unwrap();
        assert!(w.packet(Timestamp::new(1 << 33, 0), b"x").is_err());
        assert_eq!(w.into_inner().len(), FILE_HEADER_LEN);
    }
}
