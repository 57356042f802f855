//! Recording frames as a classic pcap file (LINKTYPE_ETHERNET).
//!
//! Every transport records through a [`PcapSink`]: the smoltcp transports
//! record the Ethernet frames their device sends and receives, the kernel
//! transport records Ethernet/IPv4/TCP frames it synthesizes for the bytes
//! it writes and reads. Frames are stamped from the `Instant`s the caller
//! passes to `poll`, mapped onto the wall clock once, so a capture taken
//! under virtual time is still deterministic.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// pcap magic for microsecond timestamps.
const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
/// LINKTYPE_ETHERNET.
pub const LINKTYPE_ETHERNET: u32 = 1;
/// Largest snapshot length readers accept (libpcap's MAXIMUM_SNAPLEN).
pub const MAX_SNAPLEN: u32 = 262_144;
/// Length of the file header.
pub const FILE_HEADER_LEN: usize = 24;
/// Length of each record header.
pub const RECORD_HEADER_LEN: usize = 16;

/// Writes pcap records to any byte sink.
#[derive(Debug)]
pub struct PcapWriter<W: Write> {
    out: W,
    snaplen: u32,
}

impl<W: Write> PcapWriter<W> {
    /// Writes the file header. `snaplen` is clamped to 1..=[`MAX_SNAPLEN`].
    pub fn new(mut out: W, snaplen: u32) -> io::Result<Self> {
        let snaplen = snaplen.clamp(1, MAX_SNAPLEN);
        let mut h = [0u8; FILE_HEADER_LEN];
        h[0..4].copy_from_slice(&MAGIC_MICROS.to_le_bytes());
        h[4..6].copy_from_slice(&2u16.to_le_bytes());
        h[6..8].copy_from_slice(&4u16.to_le_bytes());
        // thiszone and sigfigs stay 0.
        h[16..20].copy_from_slice(&snaplen.to_le_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        out.write_all(&h)?;
        Ok(PcapWriter { out, snaplen })
    }

    /// Appends one frame stamped `since_unix_epoch`, cut to the snapshot
    /// length (the record keeps the original length).
    pub fn write_frame(&mut self, since_unix_epoch: Duration, frame: &[u8]) -> io::Result<()> {
        let orig_len = u32::try_from(frame.len()).unwrap_or(u32::MAX);
        let incl_len = orig_len.min(self.snaplen);
        let secs = u32::try_from(since_unix_epoch.as_secs()).unwrap_or(u32::MAX);
        let mut h = [0u8; RECORD_HEADER_LEN];
        h[0..4].copy_from_slice(&secs.to_le_bytes());
        h[4..8].copy_from_slice(&since_unix_epoch.subsec_micros().to_le_bytes());
        h[8..12].copy_from_slice(&incl_len.to_le_bytes());
        h[12..16].copy_from_slice(&orig_len.to_le_bytes());
        self.out.write_all(&h)?;
        self.out.write_all(&frame[..incl_len as usize])
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// A capture a transport writes into: writer, clock mapping, first error.
///
/// Recording happens inside `poll`, which cannot fail; the first write error
/// stops the capture and is kept for [`PcapSink::error`].
pub struct PcapSink {
    writer: PcapWriter<Box<dyn Write + Send>>,
    wall_base: Duration,
    instant_base: Option<Instant>,
    error: Option<io::Error>,
    frames: u64,
}

impl std::fmt::Debug for PcapSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PcapSink")
            .field("frames", &self.frames)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl PcapSink {
    /// Creates (truncates) `path` and writes the file header.
    pub fn create(path: impl AsRef<Path>) -> io::Result<Self> {
        let file = File::create(path)?;
        Self::new(Box::new(BufWriter::with_capacity(1 << 16, file)))
    }

    /// Records into any writer, stamping frames from the current wall clock.
    pub fn new(out: Box<dyn Write + Send>) -> io::Result<Self> {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        Self::with_wall_base(out, wall)
    }

    /// Records into any writer; the first `Instant` seen is stamped
    /// `wall_base` after the Unix epoch (fixed bases make captures
    /// reproducible byte for byte).
    pub fn with_wall_base(out: Box<dyn Write + Send>, wall_base: Duration) -> io::Result<Self> {
        Ok(PcapSink {
            writer: PcapWriter::new(out, MAX_SNAPLEN)?,
            wall_base,
            instant_base: None,
            error: None,
            frames: 0,
        })
    }

    /// Records one frame seen at `now`.
    pub fn record(&mut self, now: Instant, frame: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let base = *self.instant_base.get_or_insert(now);
        let ts = self.wall_base + now.saturating_duration_since(base);
        match self.writer.write_frame(ts, frame) {
            Ok(()) => self.frames += 1,
            Err(e) => self.error = Some(e),
        }
    }

    /// Frames recorded so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The write error that stopped the capture, if any.
    pub fn error(&self) -> Option<&io::Error> {
        self.error.as_ref()
    }

    /// Pushes buffered records to the file.
    pub fn flush(&mut self) -> io::Result<()> {
        if let Some(e) = &self.error {
            return Err(io::Error::new(e.kind(), e.to_string()));
        }
        self.writer.flush()
    }
}

impl Drop for PcapSink {
    fn drop(&mut self) {
        let _ = self.writer.flush();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// One parsed record: timestamp, original length, captured bytes.
    pub(crate) type Record = (Duration, u32, Vec<u8>);

    /// Reads back a little-endian microsecond pcap (test oracle, written
    /// from the format description rather than from the writer).
    pub(crate) fn parse(bytes: &[u8]) -> Result<(u32, u32, Vec<Record>), String> {
        let u32_at = |b: &[u8], o: usize| -> Result<u32, String> {
            b.get(o..o + 4)
                .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
                .ok_or_else(|| format!("short at {o}"))
        };
        if u32_at(bytes, 0)? != MAGIC_MICROS {
            return Err("bad magic".into());
        }
        if bytes.get(4..8) != Some(&[2, 0, 4, 0][..]) {
            return Err("bad version".into());
        }
        let snaplen = u32_at(bytes, 16)?;
        let linktype = u32_at(bytes, 20)?;
        let mut at = FILE_HEADER_LEN;
        let mut records = Vec::new();
        while at < bytes.len() {
            let secs = u32_at(bytes, at)?;
            let micros = u32_at(bytes, at + 4)?;
            let incl = u32_at(bytes, at + 8)? as usize;
            let orig = u32_at(bytes, at + 12)?;
            let data = bytes
                .get(at + RECORD_HEADER_LEN..at + RECORD_HEADER_LEN + incl)
                .ok_or("truncated record")?;
            records.push((
                Duration::new(u64::from(secs), micros * 1000),
                orig,
                data.to_vec(),
            ));
            at += RECORD_HEADER_LEN + incl;
        }
        Ok((snaplen, linktype, records))
    }

    /// A `Write` whose bytes the test can still read after handing it over.
    #[derive(Clone, Default)]
    pub(crate) struct SharedBuf(pub(crate) Arc<Mutex<Vec<u8>>>);

    impl Write for SharedBuf {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn file_header_is_byte_exact() {
        let w = PcapWriter::new(Vec::new(), 65535).unwrap();
        let out = w.into_inner();
        assert_eq!(
            out,
            [
                0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0,
                0, 0
            ]
        );
    }

    #[test]
    fn record_is_byte_exact() {
        let mut w = PcapWriter::new(Vec::new(), 65535).unwrap();
        w.write_frame(Duration::new(0x0102_0304, 5_000), &[0xaa, 0xbb, 0xcc])
            .unwrap();
        let out = w.into_inner();
        assert_eq!(
            &out[FILE_HEADER_LEN..],
            [0x04, 0x03, 0x02, 0x01, 5, 0, 0, 0, 3, 0, 0, 0, 3, 0, 0, 0, 0xaa, 0xbb, 0xcc]
        );
    }

    #[test]
    fn frames_longer_than_snaplen_are_cut_but_keep_length() {
        let mut w = PcapWriter::new(Vec::new(), 4).unwrap();
        w.write_frame(Duration::ZERO, &[1, 2, 3, 4, 5, 6]).unwrap();
        let (snap, link, recs) = parse(&w.into_inner()).unwrap();
        assert_eq!((snap, link), (4, LINKTYPE_ETHERNET));
        assert_eq!(recs, vec![(Duration::ZERO, 6, vec![1, 2, 3, 4])]);
    }

    #[test]
    fn snaplen_is_clamped() {
        let w = PcapWriter::new(Vec::new(), 0).unwrap();
        assert_eq!(parse(&w.into_inner()).unwrap().0, 1);
        let w = PcapWriter::new(Vec::new(), u32::MAX).unwrap();
        assert_eq!(parse(&w.into_inner()).unwrap().0, MAX_SNAPLEN);
    }

    #[test]
    fn sink_stamps_relative_to_first_instant() {
        let buf = SharedBuf::default();
        let base = Duration::from_secs(1_700_000_000);
        let mut sink = PcapSink::with_wall_base(Box::new(buf.clone()), base).unwrap();
        let t0 = Instant::now();
        sink.record(t0, &[1]);
        sink.record(t0 + Duration::from_micros(1_500_250), &[2, 2]);
        assert_eq!(sink.frames(), 2);
        sink.flush().unwrap();
        let (_, _, recs) = parse(&buf.0.lock().unwrap()).unwrap();
        assert_eq!(recs[0].0, base);
        assert_eq!(recs[1].0, base + Duration::from_micros(1_500_250));
        assert_eq!(recs[1].2, vec![2, 2]);
    }

    struct FailingWriter;
    impl Write for FailingWriter {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn sink_keeps_first_error_and_stops() {
        // The header write fails straight away.
        assert!(PcapSink::with_wall_base(Box::new(FailingWriter), Duration::ZERO).is_err());
        // A writer that fails later: header fits, records do not.
        struct Budget(usize);
        impl Write for Budget {
            fn write(&mut self, b: &[u8]) -> io::Result<usize> {
                if self.0 < b.len() {
                    return Err(io::Error::other("full"));
                }
                self.0 -= b.len();
                Ok(b.len())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut sink =
            PcapSink::with_wall_base(Box::new(Budget(FILE_HEADER_LEN)), Duration::ZERO).unwrap();
        let now = Instant::now();
        sink.record(now, &[0; 10]);
        sink.record(now, &[0; 10]);
        assert_eq!(sink.frames(), 0);
        assert!(sink.error().is_some());
        assert!(sink.flush().is_err());
    }

    #[test]
    fn create_writes_a_readable_file() {
        let path = std::env::temp_dir().join(format!("iwarp-pcap-{}.pcap", std::process::id()));
        {
            let mut sink = PcapSink::create(&path).unwrap();
            sink.record(Instant::now(), &[9; 60]);
        }
        let bytes = std::fs::read(&path).unwrap();
        std::fs::remove_file(&path).unwrap();
        let (_, _, recs) = parse(&bytes).unwrap();
        assert_eq!(recs.len(), 1);
        assert_eq!(recs[0].2, vec![9; 60]);
    }
}
