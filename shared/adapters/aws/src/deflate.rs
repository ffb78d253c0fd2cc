//! The deflate streams that task bodies and events are stored in: deflated at the best level
//! by one reused compressor per thread, or written as stored (uncompressed) blocks where
//! deflating cannot make a write cheaper (`items::pack_into`); read back by one inflater,
//! with a fast path for a single stored block.

use std::cell::RefCell;

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};

thread_local! {
    /// A compressor and a decompressor per thread, reset between uses. A new compressor
    /// allocates and zeroes its window and hash tables, a decompressor its window: for a
    /// task of a few hundred bytes that cost more than the deflating, and on Lambda (one
    /// thread, one task per request) it showed in every send and read. zlib-rs, not
    /// miniz_oxide: its reset clears less (≈ 180,000 against ≈ 320,000 under callgrind, which
    /// counts glibc's `rep stosb` per byte; a few thousand cycles either way on the CPU:
    /// docs/performance.md, "What a count leaves out").
    static DEFLATE: RefCell<Compress> = RefCell::new(Compress::new(Compression::best(), false));
    static INFLATE: RefCell<Decompress> = RefCell::new(Decompress::new(false));
}

/// `data` deflated (raw deflate, no header), at the best compression.
pub(crate) fn deflate(data: &[u8]) -> Result<Vec<u8>, String> {
    DEFLATE.with_borrow_mut(|compress| {
        compress.reset();
        let mut out = Vec::with_capacity(data.len() / 2 + 64);
        loop {
            let read = compress.total_in() as usize;
            let status = compress
                .compress_vec(&data[read..], &mut out, FlushCompress::Finish)
                .map_err(|e| e.to_string())?;
            if status == Status::StreamEnd {
                return Ok(out);
            }
            // The output is full: room for as much again.
            out.reserve(out.capacity().max(64));
        }
    })
}

/// `deflated` (raw deflate) inflated.
pub(crate) fn inflate(deflated: &[u8]) -> Result<Vec<u8>, String> {
    if let Some(data) = single_stored_block(deflated) {
        return Ok(data.to_vec());
    }
    INFLATE.with_borrow_mut(|decompress| {
        decompress.reset(false);
        let mut out = Vec::with_capacity(deflated.len() * 4 + 64);
        loop {
            let (read, written) = (decompress.total_in(), decompress.total_out());
            let status = decompress
                // Not `Finish`: with it, miniz wants the whole output in one buffer.
                .decompress_vec(&deflated[read as usize..], &mut out, FlushDecompress::None)
                .map_err(|e| e.to_string())?;
            if status == Status::StreamEnd {
                return Ok(out);
            }
            if out.len() == out.capacity() {
                out.reserve(out.capacity());
            } else if decompress.total_in() == read && decompress.total_out() == written {
                return Err("the deflated data ends before its end".into());
            }
        }
    })
}

/// The most a stored (uncompressed) deflate block holds.
const STORED_BLOCK_MAX: usize = u16::MAX as usize;

/// The length of `len` bytes as [`stored`] writes them: five bytes of header per block.
pub(crate) fn stored_len(len: usize) -> usize {
    len + 5 * len.div_ceil(STORED_BLOCK_MAX).max(1)
}

/// `data` as a raw deflate stream of stored blocks (RFC 1951, 3.2.4): what a deflater writes
/// for data it cannot shrink, without its cost.
pub(crate) fn stored(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(stored_len(data.len()));
    let mut blocks = data.chunks(STORED_BLOCK_MAX).peekable();
    if blocks.peek().is_none() {
        // No data: one empty final block.
        out.extend_from_slice(&[1, 0, 0, 0xff, 0xff]);
    }
    while let Some(block) = blocks.next() {
        let len = block.len() as u16;
        // BFINAL on the last block; BTYPE 00 (stored); the rest of the byte is padding.
        out.push(u8::from(blocks.peek().is_none()));
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    out
}

/// The data of a raw deflate stream that is one final stored block and nothing else (what
/// [`stored`] writes for up to 64 KB), without the decompressor.
pub(crate) fn single_stored_block(stream: &[u8]) -> Option<&[u8]> {
    let [1, l0, l1, n0, n1, data @ ..] = stream else {
        return None;
    };
    let len = u16::from_le_bytes([*l0, *l1]);
    (u16::from_le_bytes([*n0, *n1]) == !len && data.len() == usize::from(len)).then_some(data)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deflate_and_inflate_round_trip_whatever_the_size() {
        // Empty, small, and large enough to outgrow the first output buffer both ways (text
        // that deflates well inflates to many times its deflated size; noise does not deflate).
        let mut noise = Vec::new();
        let mut x: u32 = 1;
        for _ in 0..200_000 {
            x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            noise.push((x >> 24) as u8);
        }
        let inputs = [
            Vec::new(),
            br#"{"id":"t1","status":{"state":"TASK_STATE_COMPLETED"}}"#.to_vec(),
            "the same words again and again "
                .repeat(50_000)
                .into_bytes(),
            noise,
        ];
        // Twice each, in turns: the thread's compressor and decompressor are reused.
        for input in inputs.iter().chain(inputs.iter()) {
            let deflated = deflate(input).unwrap();
            assert_eq!(&inflate(&deflated).unwrap(), input);
            let mut reference = Vec::new();
            std::io::Read::read_to_end(
                &mut flate2::read::DeflateDecoder::new(deflated.as_slice()),
                &mut reference,
            )
            .unwrap();
            assert_eq!(&reference, input, "plain deflate, readable by any inflater");
        }
    }

    #[test]
    fn stored_blocks_are_deflate_any_inflater_reads() {
        for len in [0, 1, 600, 65_535, 65_536, 200_000] {
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let stream = stored(&data);
            assert_eq!(stream.len(), stored_len(len), "{len}");
            assert_eq!(inflate(&stream).unwrap(), data, "{len}");
            let mut reference = Vec::new();
            std::io::Read::read_to_end(
                &mut flate2::read::DeflateDecoder::new(stream.as_slice()),
                &mut reference,
            )
            .unwrap();
            assert_eq!(reference, data, "{len}: plain deflate");
        }
        // A stream that only starts like one stored block is inflated, not taken as it is.
        let mut two = stored(b"first");
        two[0] = 0;
        two.extend(stored(b" and second"));
        assert_eq!(inflate(&two).unwrap(), b"first and second");
        let mut cut = stored(b"a stored block");
        cut.pop();
        assert!(inflate(&cut).is_err());
    }

    #[test]
    fn inflating_cut_or_corrupt_data_is_an_error() {
        let deflated = deflate(&"a task's text ".repeat(1_000).into_bytes()).unwrap();
        let cut = inflate(&deflated[..deflated.len() / 2]).unwrap_err();
        assert!(cut.contains("ends before its end"), "{cut}");
        assert!(inflate(&[0xff; 64]).is_err());
        // The decompressor is still good after a failure.
        assert_eq!(inflate(&deflate(b"after").unwrap()).unwrap(), b"after");
    }
}
